/**
 * Answers to a job's input requests: the shape check a front does before it signals them
 * (malformed → `-32602`), the schema check the runner does before the handler sees them (invalid
 * content is dropped and the handler asks again), and the hand-over to `@mcp-tether/mrtr`'s read
 * functions (`readInput`, `readInputResult`, `readRequestState`), which read a per-call store under
 * the global symbol `mcp-tether.mrtr.store`.
 */
import {
  JsonRpcErrorCode,
  ProtocolError,
  type CallContext,
  type InputRequest,
  type JsonObject,
} from '@mcp-tether/core';

/** The per-call answer store `@mcp-tether/mrtr`'s read functions look up (its documented cross-copy symbol). */
const MRTR_STORE = Symbol.for('mcp-tether.mrtr.store');

interface MrtrStore {
  answers: Map<string, JsonObject>;
  fields: Map<string, string[]>;
  payload: unknown;
  round: number;
}

const ACTIONS = new Set(['accept', 'decline', 'cancel']);

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Check the shape of answers against the outstanding requests (a front calls it before signalling).
 * Keys that were not asked are ignored (MRTR: unknown keys SHOULD be ignored); an elicitation answer
 * must be `{ action: 'accept' | 'decline' | 'cancel', content? }`.
 * @returns the answers to keys that were asked
 * @throws ProtocolError `-32602` for answers that are not objects or not an ElicitResult
 */
export function checkAnswers(asked: Record<string, InputRequest>, answers: unknown): Record<string, JsonObject> {
  if (!isObject(answers))
    throw new ProtocolError(
      JsonRpcErrorCode.InvalidParams,
      'inputResponses must be an object keyed like inputRequests',
    );
  const out: Record<string, JsonObject> = {};
  for (const [key, request] of Object.entries(asked)) {
    const answer = answers[key];
    if (answer === undefined) continue;
    if (!isObject(answer))
      throw new ProtocolError(
        JsonRpcErrorCode.InvalidParams,
        `inputResponses[${JSON.stringify(key)}] must be an object`,
      );
    if (request.method === 'elicitation/create') {
      if (typeof answer.action !== 'string' || !ACTIONS.has(answer.action)) {
        throw new ProtocolError(
          JsonRpcErrorCode.InvalidParams,
          `inputResponses[${JSON.stringify(key)}].action must be "accept", "decline" or "cancel"`,
        );
      }
      if (answer.content !== undefined && !isObject(answer.content)) {
        throw new ProtocolError(
          JsonRpcErrorCode.InvalidParams,
          `inputResponses[${JSON.stringify(key)}].content must be an object`,
        );
      }
    }
    out[key] = answer;
  }
  return out;
}

/** Whether `value` satisfies one primitive property of an elicitation `requestedSchema`. */
function fits(prop: unknown, value: unknown): boolean {
  if (!isObject(prop)) return ['string', 'number', 'boolean'].includes(typeof value);
  const choices = (list: unknown, key: 'enum' | 'const'): string[] | undefined => {
    if (key === 'enum') return Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : undefined;
    return Array.isArray(list)
      ? list.map((o) => (isObject(o) ? o.const : undefined)).filter((x): x is string => typeof x === 'string')
      : undefined;
  };
  switch (prop.type) {
    case 'string': {
      if (typeof value !== 'string') return false;
      const allowed = choices(prop.enum, 'enum') ?? choices(prop.oneOf, 'const');
      if (allowed && !allowed.includes(value)) return false;
      if (typeof prop.minLength === 'number' && value.length < prop.minLength) return false;
      if (typeof prop.maxLength === 'number' && value.length > prop.maxLength) return false;
      return true;
    }
    case 'number':
    case 'integer':
      if (typeof value !== 'number' || !Number.isFinite(value)) return false;
      if (prop.type === 'integer' && !Number.isInteger(value)) return false;
      if (typeof prop.minimum === 'number' && value < prop.minimum) return false;
      if (typeof prop.maximum === 'number' && value > prop.maximum) return false;
      return true;
    case 'boolean':
      return typeof value === 'boolean';
    case 'array': {
      if (!Array.isArray(value) || !value.every((x) => typeof x === 'string')) return false;
      const items = isObject(prop.items) ? prop.items : {};
      const allowed = choices(items.enum, 'enum') ?? choices(items.anyOf, 'const');
      if (allowed && !value.every((x) => allowed.includes(x as string))) return false;
      if (new Set(value).size !== value.length) return false;
      if (typeof prop.minItems === 'number' && value.length < prop.minItems) return false;
      if (typeof prop.maxItems === 'number' && value.length > prop.maxItems) return false;
      return true;
    }
    default:
      return false;
  }
}

/**
 * The answer the handler may see, or `undefined` when the content does not satisfy the form (the
 * handler then asks again). Unknown content keys are dropped; defaults fill missing optional fields.
 */
export function validAnswer(request: InputRequest, answer: JsonObject): JsonObject | undefined {
  if (request.method !== 'elicitation/create') return answer;
  const params = isObject(request.params) ? request.params : {};
  if (answer.action !== 'accept') return { action: answer.action };
  if (params.mode === 'url') return { action: 'accept' };
  const schema = isObject(params.requestedSchema) ? params.requestedSchema : {};
  const props = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const given = isObject(answer.content) ? answer.content : {};
  const content: JsonObject = {};
  for (const [name, prop] of Object.entries(props)) {
    const value = given[name];
    if (value === undefined) {
      const dflt = isObject(prop) ? prop.default : undefined;
      if (dflt !== undefined) content[name] = dflt;
      else if (required.has(name)) return undefined;
      continue;
    }
    if (!fits(prop, value)) return undefined;
    content[name] = value;
  }
  return { action: 'accept', content };
}

function fieldNames(request: InputRequest): string[] {
  const params = isObject(request.params) ? request.params : {};
  if (request.method !== 'elicitation/create' || params.mode === 'url') return [];
  const schema = isObject(params.requestedSchema) ? params.requestedSchema : {};
  return isObject(schema.properties) ? Object.keys(schema.properties) : [];
}

/**
 * Hand a round's answers to the handler: `ctx.inputResponses` and `ctx.requestState` (the
 * handler's unsealed state, as on a legacy in-process round), and the store `readInput` reads.
 * Answers of earlier rounds stay unless the key was asked again.
 */
export function applyAnswers(
  ctx: CallContext,
  asked: Record<string, InputRequest>,
  answers: Record<string, JsonObject>,
  requestState: unknown,
): void {
  let store = ctx.state.get(MRTR_STORE) as MrtrStore | undefined;
  if (store === undefined) {
    store = { answers: new Map(), fields: new Map(), payload: undefined, round: 0 };
    ctx.state.set(MRTR_STORE, store);
  }
  store.round++;
  if (requestState !== undefined) store.payload = requestState;
  for (const [key, request] of Object.entries(asked)) {
    store.answers.delete(key);
    store.fields.set(key, fieldNames(request));
    const raw = answers[key];
    const checked = raw === undefined ? undefined : validAnswer(request, raw);
    if (checked !== undefined) store.answers.set(key, checked);
  }
  ctx.inputResponses = Object.fromEntries(store.answers);
  ctx.requestState = store.payload;
}
