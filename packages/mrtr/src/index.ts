/**
 * @mcp-tether/mrtr — ask the user mid-call: typed form fields, `input_required` outcomes, in-process
 * elicitation on 2025-era sessions, sealed `requestState` for 2026-07-28 multi round-trip requests.
 * @packageDocumentation
 */
import { requireCall, type CallContext } from '@mcp-tether/core';
import { supportsElicitation } from './capabilities.js';
import { createStateSealer, type StateSealerOptions } from './seal.js';

export {
  ask,
  Field,
  StringField,
  NumberField,
  BooleanField,
  EnumField,
  MultiEnumField,
  isField,
  requestedSchema,
  type AnyField,
  type EnumOption,
  type Fields,
  type Infer,
  type StringFormat,
} from './fields.js';
export { requireInput, readInput, readInputResult, readRequestState, defaultKey, type AskOptions } from './input.js';
export { mrtr, bindingOf, type MrtrOptions } from './middleware.js';
export { capabilityRefusal, missingCapabilities, supportsElicitation } from './capabilities.js';
export { MemoryReplayStore, type ReplayStore } from './replay.js';
export {
  createStateSealer,
  requestBinding,
  KEYS_ENV,
  canonicalJson,
  MAX_CANONICAL_DEPTH,
  StateRejectedError,
  type BindingInput,
  type SealKey,
  type StateRejection,
  type StateSealer,
  type StateSealerOptions,
} from './seal.js';
export { checkResponse, contentValidator, type Checked, type InputAnswer } from './validate.js';
export { applyInputRound, checkInputResponses, type CheckedResponses } from './rounds.js';

/**
 * Seal `payload` with a one-off sealer (see {@link createStateSealer}); `binding` as from
 * {@link requestBinding}.
 * @throws RangeError over the size cap; TypeError for a non-JSON payload or bad keys
 */
export function seal(payload: unknown, options: StateSealerOptions & { binding?: string } = {}): string {
  return createStateSealer(options).seal(payload, options.binding);
}

/**
 * Verify and open a sealed state with a one-off sealer (see {@link createStateSealer}).
 * @throws StateRejectedError (`-32602`) when it is tampered, expired, foreign or oversized
 */
export function open(token: unknown, options: StateSealerOptions & { binding?: string } = {}): unknown {
  return createStateSealer(options).open(token, options.binding);
}

/**
 * Whether the current call can ask the user in `mode` right now: on a 2025-era session it needs a
 * live channel and the client's capability for the mode; on 2026-07-28, the capability in this
 * request's `_meta`. Use it to offer a fallback instead of a refusal.
 * @param mode `form` (default) or `url`
 * @throws Error outside a call of a server wrapped with `tether()` (unless `ctx` is given)
 */
export function canElicit(mode: 'form' | 'url' = 'form', ctx: CallContext = requireCall()): boolean {
  if (ctx.era === 'legacy' && !ctx.channel) return false;
  return supportsElicitation(ctx.clientCapabilities, mode);
}
