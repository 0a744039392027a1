/**
 * What the client declared it can answer, and the refusal when it did not: the client-capability
 * checks of `input_required` rounds (which elicitation modes — `form`, `url` — and whether sampling
 * and roots the client declared, per 2025-11-25: `elicitation: {}` means form only), and the text
 * and errors a call gets when a request needs a capability the client lacks (`-32021` on
 * 2026-07-28, an `ELICITATION_UNSUPPORTED` refusal on 2025). `mrtr()` and the fronts that ask later
 * (`@mcp-tether/jobs`) use the same checks.
 */
import {
  ErrorCode,
  JsonRpcErrorCode,
  ProtocolError,
  refuse,
  type CallContext,
  type CallResult,
  type InputRequest,
  type JsonObject,
} from '@mcp-tether/core';
import { fieldNames } from './rounds.js';
import { isObject } from './validate.js';

/**
 * What the client must declare for these requests and does not, or undefined when it has all.
 * Elicitation modes follow 2025-11-25: `elicitation: {}` means form only; `{ form: {} }`, `{ url: {} }`.
 */
export function missingCapabilities(
  caps: JsonObject,
  requests: ReadonlyArray<[string, InputRequest]>,
): JsonObject | undefined {
  const missing: JsonObject = {};
  for (const [, request] of requests) {
    if (request.method === 'elicitation/create') {
      const mode = request.params?.mode === 'url' ? 'url' : 'form';
      if (!supportsElicitation(caps, mode)) {
        if (missing.elicitation === undefined) missing.elicitation = {};
        (missing.elicitation as JsonObject)[mode] = {};
      }
    } else if (request.method === 'sampling/createMessage') {
      if (!isObject(caps.sampling)) missing.sampling = {};
    } else if (request.method === 'roots/list') {
      if (!isObject(caps.roots)) missing.roots = {};
    }
  }
  return Object.keys(missing).length ? missing : undefined;
}

/**
 * The refusal a call gets when its input requests need a capability the client did not declare, the
 * same one `mrtr()` gives a plain call, by era: on 2026-07-28 `{ error }`, a `ProtocolError` `-32021`
 * (`MissingRequiredClientCapability`) with `data.requiredCapabilities`; on 2025 `{ result }`, the
 * `ELICITATION_UNSUPPORTED` refusal (an `isError` tool result; a `{ error }` for prompts and
 * resources). `undefined` when the client declared all it needs. For fronts that would otherwise ask
 * later (a task's `input_required`, `@mcp-tether/jobs`): never ask a client in a mode it did not declare.
 */
export function capabilityRefusal(
  ctx: CallContext,
  requests: ReadonlyArray<[string, InputRequest]>,
): { error: ProtocolError } | { result: CallResult } | undefined {
  const missing = missingCapabilities(ctx.clientCapabilities, requests);
  if (!missing) return undefined;
  if (ctx.era === 'modern') return { error: missingCapabilityError(missing) };
  try {
    return { result: missingCapabilityRefusal(ctx, requests, missing) };
  } catch (err) {
    return { error: err as ProtocolError };
  }
}

/**
 * 2026-07-28 basic/patterns/mrtr: never include a request type the client did not declare in this
 * request; if the server cannot proceed, `-32021` with `data.requiredCapabilities`.
 */
export function missingCapabilityError(missing: JsonObject): ProtocolError {
  return new ProtocolError(
    JsonRpcErrorCode.MissingRequiredClientCapability,
    `Missing required client capability: ${describeCapabilities(missing)}`,
    { requiredCapabilities: missing },
  );
}

/**
 * 2025: the `ELICITATION_UNSUPPORTED` refusal of a call whose requests need `missing` (an `isError`
 * tool result; for prompts and resources `refuse` throws the JSON-RPC error instead).
 */
export function missingCapabilityRefusal(
  ctx: CallContext,
  requests: ReadonlyArray<[string, InputRequest]>,
  missing: JsonObject,
): CallResult {
  return refuse(
    ctx,
    ErrorCode.ELICITATION_UNSUPPORTED,
    unsupportedText(
      requests,
      `the client does not support ${describeCapabilities(missing)}`,
      `an MCP client that supports ${describeCapabilities(missing)}`,
    ),
    { requiredCapabilities: missing },
  );
}

/** True when client capabilities `caps` allow an elicitation in `mode`. */
export function supportsElicitation(caps: JsonObject, mode: 'form' | 'url'): boolean {
  const e = caps.elicitation;
  if (!isObject(e)) return false;
  const form = isObject(e.form);
  const url = isObject(e.url);
  return mode === 'url' ? url : form || (!form && !url);
}

function describeCapabilities(missing: JsonObject): string {
  const parts: string[] = [];
  if (isObject(missing.elicitation))
    for (const mode of Object.keys(missing.elicitation)) parts.push(`${mode}-mode elicitation`);
  if (missing.sampling) parts.push('sampling');
  if (missing.roots) parts.push('roots');
  return parts.join(', ');
}

/**
 * The refusal text the model reads when input cannot be asked for: what the tool wanted to ask
 * (so the model can tell the user), that calling again the same way cannot succeed, and the two
 * ways out (arguments that carry the answer, if the tool has them; another client or connection).
 */
export function unsupportedText(requests: ReadonlyArray<[string, InputRequest]>, why: string, needs: string): string {
  const asked = requests.map(([, r]) => describeRequest(r)).join('; ');
  return (
    `This tool needs an answer from the user (${asked}), but ${why}, so it cannot ask. ` +
    'Calling it again with the same arguments gets this same refusal. ' +
    "If the tool's input schema has arguments for that answer, ask the user in the conversation and call it again with them; " +
    `otherwise tell the user this step needs ${needs}.`
  );
}

function describeRequest(request: InputRequest): string {
  const p = request.params ?? {};
  if (request.method === 'sampling/createMessage') return 'a model completion through the client (sampling)';
  if (request.method === 'roots/list') return "the client's roots";
  const message = typeof p.message === 'string' ? JSON.stringify(p.message) : 'a question';
  // The URL itself is for the user's eyes only (it may carry a one-time state): not given to the model.
  if (p.mode === 'url') return `${message}, on a web page the client would open for the user`;
  const fields = fieldNames(request);
  return fields.length ? `${message}, fields: ${fields.join(', ')}` : message;
}
