/**
 * Answering input rounds for a runner that holds a call across rounds itself, outside the `mrtr()`
 * middleware: `@mcp-tether/jobs` (answers arrive by the 2026 `tasks/update`, 2025 `tasks/result`
 * elicitations, or `jobs.status { inputResponses }`). With these two functions a job's answers are
 * checked exactly as inline ones: the same validator, built from the `requestedSchema` that was
 * sent (types, `format` such as `email`/`date`/`uri`, enums, bounds, defaults), and the handler
 * reads them with the same `readInput` / `readInputResult` / `readRequestState`.
 */
import {
  JsonRpcErrorCode,
  ProtocolError,
  type CallContext,
  type InputRequest,
  type JsonObject,
} from '@mcp-tether/core';
import { STORE, type Store } from './input.js';
import { checkResponse, isObject } from './validate.js';

/** What {@link checkInputResponses} found. */
export interface CheckedResponses {
  /** The raw responses to keys that were asked (unknown keys are ignored), none malformed. */
  readonly answers: Record<string, JsonObject>;
  /**
   * Keys whose accepted content does not satisfy the form, with the reason (e.g.
   * `email: Invalid email address`). Such an answer is dropped by {@link applyInputRound}: the
   * handler does not see it and asks again, as inline.
   */
  readonly invalid: Record<string, string>;
}

/**
 * Check answers against the outstanding requests before they are delivered (a front calls it).
 * Keys that were not asked are ignored (MRTR: unknown keys SHOULD be ignored).
 * @param asked the outstanding input requests, by key
 * @param responses the client's `inputResponses`
 * @throws ProtocolError `-32602` when `responses` is not an object, or an answer is malformed (not an
 *   object; an elicitation answer without a valid `action`, or with a `content` that is not an object)
 */
export function checkInputResponses(asked: Record<string, InputRequest>, responses: unknown): CheckedResponses {
  if (!isObject(responses))
    throw new ProtocolError(
      JsonRpcErrorCode.InvalidParams,
      'inputResponses must be an object keyed like inputRequests',
    );
  const answers: Record<string, JsonObject> = {};
  const invalid: Record<string, string> = {};
  for (const [key, request] of Object.entries(asked)) {
    const raw = responses[key];
    if (raw === undefined) continue;
    const checked = checkResponse(raw, request);
    if (!checked.ok && checked.malformed)
      throw new ProtocolError(
        JsonRpcErrorCode.InvalidParams,
        `inputResponses[${JSON.stringify(key)}]: ${checked.reason}`,
      );
    if (!checked.ok) invalid[key] = checked.reason;
    answers[key] = raw as JsonObject;
  }
  return { answers, invalid };
}

/**
 * Hand one round's answers to the call's handler before it runs again: each answer is validated
 * against the request it answers (an invalid one is dropped: the handler asks again), and the
 * valid ones become what `readInput`, `readInputResult` and `ctx.inputResponses` give; answers of
 * earlier rounds stay unless their key was asked again. `requestState` (the handler's unsealed
 * continuation payload, when the round carried one) becomes what `readRequestState` and
 * `ctx.requestState` give.
 * @param ctx the call the handler runs in
 * @param asked the round's input requests, by key
 * @param answers the raw responses, by key (missing keys: no answer)
 * @param requestState the round's continuation payload, or `undefined` to keep the earlier one
 */
export function applyInputRound(
  ctx: CallContext,
  asked: Record<string, InputRequest>,
  answers: Record<string, unknown>,
  requestState: unknown,
): void {
  let store = ctx.state.get(STORE) as Store | undefined;
  if (store === undefined) {
    store = { answers: new Map(), fields: new Map(), payload: undefined, round: 0 };
    ctx.state.set(STORE, store);
  }
  store.round++;
  if (requestState !== undefined) store.payload = requestState;
  for (const [key, request] of Object.entries(asked)) {
    store.answers.delete(key);
    store.fields.set(key, fieldNames(request));
    const raw = answers[key];
    if (raw === undefined) continue;
    const checked = checkResponse(raw, request);
    if (checked.ok) store.answers.set(key, checked.answer);
  }
  ctx.inputResponses = Object.fromEntries(store.answers);
  ctx.requestState = store.payload;
}

/** The field names of a form request (none for URL mode and other request methods). */
export function fieldNames(request: Pick<InputRequest, 'method' | 'params'>): string[] {
  if (request.method !== 'elicitation/create') return [];
  const props = (request.params?.requestedSchema as { properties?: unknown } | undefined)?.properties;
  return isObject(props) ? Object.keys(props) : [];
}
