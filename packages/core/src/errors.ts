/**
 * Errors and refusals.
 *
 * The rule: a refusal the model should read and act on (busy, input unsupported, too many
 * rounds, timed out) is a *tool result* with `isError: true` and a stable code in
 * `structuredContent.code`. A protocol fault (bad params, tampered requestState, unknown level) is
 * a JSON-RPC error with the spec's numeric code ({@link JsonRpcErrorCode}). Outside `tools/call`
 * (prompts/get, resources/read have no `isError`), refusals become JSON-RPC errors whose `data.code`
 * carries the same string code.
 */
import type { CallContext, JsonObject } from './types.js';

/** Stable machine-readable refusal codes, found in `structuredContent.code` of an `isError` result. */
export const ErrorCode = {
  /** The mutex or limiter queue is full (`@mcp-tether/mutex`). */
  BUSY: 'BUSY',
  /** The call needs user input but there is no channel, or the client lacks the capability/mode (`@mcp-tether/mrtr`). */
  ELICITATION_UNSUPPORTED: 'ELICITATION_UNSUPPORTED',
  /** Too many input rounds (`@mcp-tether/mrtr`). */
  MAX_ROUNDS: 'MAX_ROUNDS',
  /** A server-side deadline passed (`@mcp-tether/cancel`). */
  TIMEOUT: 'TIMEOUT',
  /** The server is draining and takes no new calls (`@mcp-tether/cancel`). */
  SHUTTING_DOWN: 'SHUTTING_DOWN',
  /** A handler returned input_required and nothing could serve it (no mrtr middleware). */
  INPUT_REQUIRED_UNHANDLED: 'INPUT_REQUIRED_UNHANDLED',
  /**
   * A rate limit refused the call (`@mcp-tether/ratelimit`): the `data.code` of a JSON-RPC error
   * {@link JsonRpcErrorCode.RateLimited}, with `data.retryAfterMs` and `data.retryAfterSeconds`.
   */
  RATE_LIMITED: 'RATE_LIMITED',
} as const;
/** One of {@link ErrorCode}. */
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** JSON-RPC error codes used by MCP (spec `basic/index#error-codes`, schema `ErrorCode`). */
export const JsonRpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** 2026-07-28 `MissingRequiredClientCapabilityError`. */
  MissingRequiredClientCapability: -32021,
  /**
   * tether's rate-limit refusal (`@mcp-tether/ratelimit`), in the implementation-defined server
   * error range (-32000..-32099); the same number toolhive's rate limiter answers. `data`:
   * `{ code: 'RATE_LIMITED', retryAfterMs, retryAfterSeconds, scope }`.
   */
  RateLimited: -32029,
} as const;

/**
 * A protocol fault: thrown from a middleware or handler it becomes a JSON-RPC error response with
 * this numeric code (the SDKs read `code`, `message`, `data` off the thrown error).
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/**
 * A refusal as a tool result: `{ content: [{type:'text', text: message}], isError: true,
 * structuredContent: { code, message, ...data } }`.
 */
export function refusal(code: string, message: string, data?: JsonObject): JsonObject {
  return {
    content: [{ type: 'text', text: message }],
    isError: true,
    structuredContent: { code, message, ...data },
  };
}

/** The refusal code of a result made by {@link refusal}, if any. */
export function refusalCode(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const r = result as { isError?: unknown; structuredContent?: { code?: unknown } };
  return r.isError === true && typeof r.structuredContent?.code === 'string' ? r.structuredContent.code : undefined;
}

/**
 * Refuse a call in the way its method allows: an `isError` tool result for `tools/call`, else a
 * JSON-RPC error (`-32603` with `data.code`) since prompts and resources have no `isError`.
 * @throws ProtocolError for prompts/get and resources/read
 */
export function refuse(ctx: Pick<CallContext, 'method'>, code: string, message: string, data?: JsonObject): JsonObject {
  if (ctx.method === 'tools/call') return refusal(code, message, data);
  throw new ProtocolError(JsonRpcErrorCode.InternalError, message, { code, ...data });
}
