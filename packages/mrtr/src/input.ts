/**
 * The handler-facing API: `requireInput.elicit(...)` / `requireInput.url(...)` to ask, and
 * `readInput(...)`, `readInputResult(...)`, `readRequestState()` to read the answers on re-entry.
 */
import {
  requireCall,
  type CallContext,
  type InputRequest,
  type InputRequiredResult,
  type JsonObject,
} from '@mcp-tether/core';
import { type Fields, type Infer, requestedSchema } from './fields.js';
import { contentValidator, type InputAnswer } from './validate.js';

/** @internal Where the middleware (or {@link applyInputRound}) leaves validated answers for the read functions (one per call). */
export const STORE = Symbol('mcp-tether.mrtr.store');

/** @internal */
export interface Store {
  /** Input key → validated response. Insertion order is recency (a re-asked key moves to the end). */
  answers: Map<string, JsonObject>;
  /** Input key → field names of the form it answered (empty for URL mode and non-elicitation requests). */
  fields: Map<string, string[]>;
  /** The unsealed continuation payload. */
  payload: unknown;
  /** Rounds served before this run of the handler (0 on the first run). */
  round: number;
}

/** @internal */
export function storeOf(ctx: CallContext): Store | undefined {
  return ctx.state.get(STORE) as Store | undefined;
}

/** Options of {@link requireInput}. */
export interface AskOptions {
  /**
   * The key of this request in `inputRequests` (and in `inputResponses` on the retry). Default: the
   * field names joined with `+` in declaration order (`confirm`, `amount+reason`); for
   * `requireInput.url`, `url`.
   */
  key?: string;
  /**
   * Continuation payload: any JSON value that must survive the round trip; read it back with
   * {@link readRequestState}. On 2026-07-28 it crosses the client sealed (signed, not encrypted:
   * the client can read it, so keep secrets out). Replaces the payload of earlier rounds.
   */
  state?: unknown;
}

/** The default input key of a form: its field names joined with `+`. */
export function defaultKey(fields: Fields): string {
  const names = Object.keys(fields);
  if (names.length === 0) throw new TypeError('mrtr: a form without fields needs options.key');
  return names.join('+');
}

function outcome(key: string, request: InputRequest, options: AskOptions | undefined): InputRequiredResult {
  if (typeof key !== 'string' || key === '') throw new TypeError('mrtr: the input key must be a non-empty string');
  const result: InputRequiredResult = { resultType: 'input_required', inputRequests: { [key]: request } };
  if (options && 'state' in options && options.state !== undefined) result.requestState = options.state;
  return result;
}

/**
 * Return one of these from a handler to ask the user something. The `mrtr()` middleware serves it
 * (in-process on 2025-era sessions, as a wire `input_required` result on 2026-07-28) and runs the
 * handler again with the answers.
 */
export const requireInput = {
  /**
   * Ask for a form (`elicitation/create`, mode `form`).
   * @param message what the user is asked, shown by the client
   * @param fields the form: field name → `ask.*` descriptor
   * @returns an `input_required` outcome with one input request, keyed by `options.key` or the field names
   * @throws TypeError for a bad field, an invalid default, or an empty form without `options.key`
   */
  elicit<F extends Fields>(message: string, fields: F, options?: AskOptions): InputRequiredResult {
    if (typeof message !== 'string') throw new TypeError('mrtr: the message must be a string');
    const schema = requestedSchema(fields);
    checkDefaults(schema);
    return outcome(
      options?.key ?? defaultKey(fields),
      { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: schema } },
      options,
    );
  },
  /**
   * Ask the user to visit a URL out of band (`elicitation/create`, mode `url`; MCP 2025-11-25+),
   * e.g. an OAuth consent screen. `accept` only means the user agreed to go; check the outcome
   * yourself on re-entry. Never put credentials or personal data in the URL.
   * @throws TypeError when `url` is not an absolute URL
   */
  url(message: string, url: string | URL, options?: AskOptions): InputRequiredResult {
    if (typeof message !== 'string') throw new TypeError('mrtr: the message must be a string');
    let href: string;
    try {
      href = new URL(String(url)).href;
    } catch {
      throw new TypeError(`mrtr: ${JSON.stringify(String(url))} is not an absolute URL`);
    }
    return outcome(
      options?.key ?? 'url',
      { method: 'elicitation/create', params: { mode: 'url', message, url: href } },
      options,
    );
  },
};

function checkDefaults(schema: JsonObject): void {
  const props = schema.properties as Record<string, JsonObject>;
  const withDefaults = Object.entries(props).filter(([, p]) => p.default !== undefined);
  if (withDefaults.length === 0) return;
  const sample = Object.fromEntries(withDefaults.map(([k, p]) => [k, p.default]));
  const only = {
    type: 'object',
    properties: Object.fromEntries(withDefaults.map(([k, p]) => [k, p])),
    required: withDefaults.map(([k]) => k),
  };
  const r = contentValidator(only).safeParse(sample);
  if (!r.success)
    throw new TypeError(
      `mrtr: a default does not satisfy its own field: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
}

function findByFields(store: Store, names: string[]): [string, JsonObject] | undefined {
  const want = [...names].sort().join('\u0000');
  const entries = [...store.answers.entries()].reverse();
  return entries.find(([key]) => [...(store.fields.get(key) ?? [])].sort().join('\u0000') === want);
}

function findByName(store: Store, name: string): [string, JsonObject] | undefined {
  const direct = store.answers.get(name);
  if (direct) return [name, direct];
  const entries = [...store.answers.entries()].reverse();
  return entries.find(([key]) => store.fields.get(key)?.includes(name));
}

function ctxOrCurrent(ctx: CallContext | undefined): CallContext {
  return ctx ?? requireCall();
}

/**
 * The validated answer on re-entry, or `undefined` (not asked yet, declined, cancelled, or the
 * answer failed validation and is being asked again).
 *
 * - `readInput(fields)` (the same object given to `requireInput.elicit`): the whole typed answer.
 * - `readInput('name')`: one field's value (a field name of any answered form), or, for a key that
 *   is not a field name, that form's whole content.
 *
 * Reads the current call through AsyncLocalStorage; pass `ctx` to read another context.
 * @throws Error outside a call of a server wrapped with `tether()`
 */
export function readInput<F extends Fields>(fields: F, ctx?: CallContext): Infer<F> | undefined;
export function readInput<T = unknown>(name: string, ctx?: CallContext): T | undefined;
export function readInput(which: string | Fields, ctx?: CallContext): unknown {
  const store = storeOf(ctxOrCurrent(ctx));
  if (!store) return undefined;
  if (typeof which === 'string') {
    const hit = findByName(store, which);
    if (!hit || hit[1].action !== 'accept') return undefined;
    const content = hit[1].content as JsonObject | undefined;
    if (store.fields.get(hit[0])?.includes(which)) return content?.[which];
    return content;
  }
  const hit = findByFields(store, Object.keys(which));
  return hit && hit[1].action === 'accept' ? hit[1].content : undefined;
}

/**
 * The user's full answer on re-entry, so the handler can tell the three actions apart:
 * `{ action: 'accept', content }`, `{ action: 'decline' }`, `{ action: 'cancel' }`; `undefined`
 * when there is none (not asked yet, or asked again after invalid content).
 *
 * `which` is the form's fields object, its input key, or one of its field names. For requests
 * other than elicitation (a raw `sampling/createMessage` or `roots/list` input request) it is the
 * client's result object as received.
 * @throws Error outside a call of a server wrapped with `tether()`
 */
export function readInputResult<F extends Fields>(fields: F, ctx?: CallContext): InputAnswer<Infer<F>> | undefined;
export function readInputResult(key: string, ctx?: CallContext): InputAnswer | undefined;
export function readInputResult(which: string | Fields, ctx?: CallContext): unknown {
  const store = storeOf(ctxOrCurrent(ctx));
  if (!store) return undefined;
  const hit = typeof which === 'string' ? findByName(store, which) : findByFields(store, Object.keys(which));
  return hit?.[1];
}

/**
 * The continuation payload attached with `requireInput.*(…, { state })` in an earlier round (the
 * latest one attached), or `undefined`. On 2026-07-28 it came back sealed and was verified before
 * the handler ran.
 * @throws Error outside a call of a server wrapped with `tether()`
 */
export function readRequestState<T = unknown>(ctx?: CallContext): T | undefined {
  return storeOf(ctxOrCurrent(ctx))?.payload as T | undefined;
}
