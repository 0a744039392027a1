/**
 * Answer validation. Validators are built from the `requestedSchema` that was actually sent (not
 * from the descriptors), so a legacy in-process round and a 2026-07-28 retry (where the schema
 * comes back inside the sealed requestState) check answers the same way.
 */
import type { InputRequest, JsonObject } from '@mcp-tether/core';
import { z } from 'zod';

/** The user's answer to one input request, after validation. */
export type InputAnswer<T = Record<string, unknown>> =
  | { readonly action: 'accept'; readonly content: T }
  | { readonly action: 'decline' }
  | { readonly action: 'cancel' };

/** Outcome of checking one raw response. */
export type Checked =
  | { ok: true; answer: JsonObject }
  /** `malformed`: not an ElicitResult at all (a protocol fault); otherwise the content failed the schema (ask again). */
  | { ok: false; malformed: boolean; reason: string };

const ACTIONS = new Set(['accept', 'decline', 'cancel']);
const cache = new WeakMap<object, z.ZodType>();

/** A zod validator for the `content` of an accepted form, from its `requestedSchema`. */
export function contentValidator(requestedSchema: unknown): z.ZodType {
  if (typeof requestedSchema === 'object' && requestedSchema !== null) {
    const hit = cache.get(requestedSchema);
    if (hit) return hit;
  }
  const rs = isObject(requestedSchema) ? requestedSchema : {};
  const properties = isObject(rs.properties) ? rs.properties : {};
  const required = new Set(
    Array.isArray(rs.required) ? rs.required.filter((r): r is string => typeof r === 'string') : [],
  );
  const shape: Record<string, z.ZodType> = {};
  for (const [name, prop] of Object.entries(properties)) {
    let v = propertyValidator(prop);
    const p = isObject(prop) ? prop : {};
    if (p.default !== undefined) v = v.default(p.default as never);
    else if (!required.has(name)) v = v.optional();
    shape[name] = v;
  }
  // Unknown keys in the answer are dropped (z.object strips them).
  const validator = z.object(shape);
  if (typeof requestedSchema === 'object' && requestedSchema !== null) cache.set(requestedSchema, validator);
  return validator;
}

function propertyValidator(prop: unknown): z.ZodType {
  if (!isObject(prop)) return anyPrimitive;
  switch (prop.type) {
    case 'string': {
      const choices = stringChoices(prop.enum) ?? constChoices(prop.oneOf);
      if (choices) return z.enum(choices as [string, ...string[]]);
      let s: z.ZodType<string> = z.string();
      const f = prop.format;
      if (f === 'email') s = z.email();
      else if (f === 'uri') s = z.url();
      else if (f === 'date') s = z.iso.date();
      else if (f === 'date-time') s = z.iso.datetime({ offset: true });
      let str = s as z.ZodString;
      if (typeof prop.minLength === 'number') str = str.min(prop.minLength);
      if (typeof prop.maxLength === 'number') str = str.max(prop.maxLength);
      return str;
    }
    case 'number':
    case 'integer': {
      let n = prop.type === 'integer' ? z.number().int() : z.number();
      if (typeof prop.minimum === 'number') n = n.min(prop.minimum);
      if (typeof prop.maximum === 'number') n = n.max(prop.maximum);
      return n;
    }
    case 'boolean':
      return z.boolean();
    case 'array': {
      const items = isObject(prop.items) ? prop.items : {};
      const choices = stringChoices(items.enum) ?? constChoices(items.anyOf);
      let a = z.array(choices ? z.enum(choices as [string, ...string[]]) : z.string());
      if (typeof prop.minItems === 'number') a = a.min(prop.minItems);
      if (typeof prop.maxItems === 'number') a = a.max(prop.maxItems);
      return a.refine((xs) => new Set(xs).size === xs.length, 'each choice may be picked once');
    }
    default:
      return anyPrimitive;
  }
}

const anyPrimitive = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]);

function stringChoices(v: unknown): string[] | undefined {
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string') ? v : undefined;
}

function constChoices(v: unknown): string[] | undefined {
  if (!Array.isArray(v) || v.length === 0) return undefined;
  const out = v.map((o) => (isObject(o) ? o.const : undefined));
  return out.every((x): x is string => typeof x === 'string') ? out : undefined;
}

/**
 * Check a raw response to `request` (an `ElicitResult` for `elicitation/create`).
 * - Not an object, or an unknown `action`: malformed.
 * - `decline` / `cancel`: `{ action }` (any content is dropped).
 * - `accept` in form mode: `content` is validated against the request's `requestedSchema`;
 *   defaults fill missing fields, unknown fields are dropped. Content that fails is not malformed:
 *   the caller asks again.
 * - `accept` in URL mode: `{ action: 'accept' }`.
 * - Other request methods (`sampling/createMessage`, `roots/list`): any object passes unchanged.
 */
export function checkResponse(raw: unknown, request: Pick<InputRequest, 'method' | 'params'>): Checked {
  if (!isObject(raw)) return { ok: false, malformed: true, reason: 'the response is not an object' };
  if (request.method !== 'elicitation/create') return { ok: true, answer: raw };
  const action = raw.action;
  if (typeof action !== 'string' || !ACTIONS.has(action))
    return { ok: false, malformed: true, reason: 'the response has no valid action (accept, decline, cancel)' };
  if (action !== 'accept') return { ok: true, answer: { action } };
  const params = request.params ?? {};
  if (params.mode === 'url') return { ok: true, answer: { action: 'accept' } };
  const content = raw.content === undefined || raw.content === null ? {} : raw.content;
  if (!isObject(content)) return { ok: false, malformed: true, reason: 'content is not an object' };
  const parsed = contentValidator(params.requestedSchema).safeParse(content);
  if (!parsed.success) {
    const reason = parsed.error.issues.map((i) => `${i.path.join('.') || '(content)'}: ${i.message}`).join('; ');
    return { ok: false, malformed: false, reason };
  }
  return { ok: true, answer: { action: 'accept', content: parsed.data as JsonObject } };
}

/** @internal */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
