/**
 * What a job's chain returned, read as the job's next step (ask for input, or end), and how the end
 * is written: the outcome a remote executor settles and the terminal patch of the record.
 */
import {
  ErrorCode,
  JsonRpcErrorCode,
  ProtocolError,
  isInputRequired,
  refusal,
  type CallAbortReason,
  type CallContext,
  type CallResult,
  type InputRequest,
  type JsonObject,
} from '@mcp-tether/core';
import { capabilityRefusal } from '@mcp-tether/mrtr';
import type { JobOutcome } from './executor.js';
import type { JobError, JobMode, JobPatch } from './store.js';

/** A job's next step after round `round` returned: end with an error or a result, or ask for input. */
export type RoundStep =
  | { readonly type: 'end'; readonly error: unknown; readonly result?: CallResult }
  | { readonly type: 'ask'; readonly asked: Record<string, InputRequest> };

/**
 * Read what the chain returned in round `round` (1-based) of a job in `mode`: a plain result ends
 * the job; `input_required` asks, unless past `maxRounds` (a `MAX_ROUNDS` refusal), without
 * requests (an internal error), or in a mode the client did not declare (the refusal a plain call
 * gets; handle mode is exempt: the model answers through `jobs.status`).
 */
export function roundStep(
  ctx: CallContext,
  mode: JobMode,
  result: CallResult,
  round: number,
  maxRounds: number,
): RoundStep {
  if (!isInputRequired(result)) return { type: 'end', error: undefined, result };
  if (round > maxRounds)
    return {
      type: 'end',
      error: undefined,
      result: refusal(ErrorCode.MAX_ROUNDS, `Gave up asking: this job needed more than ${maxRounds} rounds of input.`, {
        maxRounds,
      }),
    };
  const asked = (
    typeof result.inputRequests === 'object' && result.inputRequests !== null ? result.inputRequests : {}
  ) as Record<string, InputRequest>;
  if (Object.keys(asked).length === 0)
    return {
      type: 'end',
      error: new ProtocolError(
        JsonRpcErrorCode.InternalError,
        'the handler returned input_required without inputRequests',
      ),
    };
  // Never ask a client in a mode it did not declare (issue 26, fault 1): the task ends at once
  // with the refusal a plain call gets (2025: ELICITATION_UNSUPPORTED; 2026-07-28: -32021),
  // instead of waiting in input_required for an answer that cannot come.
  const unsupported = mode === 'handle' ? undefined : capabilityRefusal(ctx, Object.entries(asked));
  if (unsupported !== undefined)
    return 'error' in unsupported
      ? { type: 'end', error: unsupported.error }
      : { type: 'end', error: undefined, result: unsupported.result };
  return { type: 'ask', asked };
}

/** The outcome a remote executor's worker settles: a result, an abort, or an error. */
export function outcomeOf(
  err: unknown,
  result: CallResult | undefined,
  aborted: CallAbortReason | undefined,
): JobOutcome {
  if (result !== undefined) return { type: 'result', result };
  if (aborted !== undefined) return { type: 'aborted', reason: aborted };
  return { type: 'error', error: err };
}

/**
 * The terminal patch of the record: `completed` with the result (as plain JSON), `cancelled` with
 * `cancelMessage` (or the abort's message), or `failed` with the error; `extra` is spread last.
 */
export function outcomePatch(
  err: unknown,
  result: CallResult | undefined,
  aborted: CallAbortReason | undefined,
  cancelMessage: string | undefined,
  extra: Partial<JobPatch>,
): JobPatch {
  if (result !== undefined) return { status: 'completed', result: jsonResult(result), ...extra };
  if (aborted !== undefined) return { status: 'cancelled', statusMessage: cancelMessage ?? aborted.message, ...extra };
  return {
    status: 'failed',
    error: jobError(err),
    statusMessage: err instanceof Error ? err.message : String(err),
    ...extra,
  };
}

/** A result the store can keep (plain JSON). */
function jsonResult(result: CallResult): JsonObject {
  return JSON.parse(JSON.stringify(result)) as JsonObject;
}

function jobError(err: unknown): JobError {
  if (err instanceof ProtocolError || (err instanceof Error && typeof (err as { code?: unknown }).code === 'number')) {
    const e = err as Error & { code: number; data?: unknown };
    return {
      code: e.code,
      message: e.message,
      ...(e.data !== undefined ? { data: JSON.parse(JSON.stringify(e.data)) as unknown } : {}),
    };
  }
  return { code: JsonRpcErrorCode.InternalError, message: err instanceof Error ? err.message : String(err) };
}
