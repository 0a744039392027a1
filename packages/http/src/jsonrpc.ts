/** JSON-RPC envelopes as the front checks them, and the error responses it answers with. */
import { ErrorCode, JsonRpcErrorCode } from '@mcp-tether/core';

export type Id = string | number;
export type Message = Record<string, unknown>;

export function isId(v: unknown): v is Id {
  return typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A request (has an id and a method). */
export function isRequest(m: Message): boolean {
  return typeof m.method === 'string' && m.id !== undefined;
}

/** A response (has an id, no method). */
export function isResponse(m: Message): boolean {
  return m.method === undefined && m.id !== undefined && ('result' in m || 'error' in m);
}

/**
 * Why `value` is not a JSON-RPC 2.0 request, notification or response (the first problem found),
 * or undefined when it is one. Rules of JSON-RPC 2.0 §4–5 as MCP narrows them: ids are strings or
 * integers (never null), `params` and `params._meta` are objects, a progress token is a string or
 * an integer.
 */
export function envelopeProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'a message must be a JSON object';
  if (value.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  if ('id' in value && !isId(value.id)) return 'id must be a string or an integer';
  if (value.method === undefined) {
    if (!('id' in value)) return 'a message needs a method (request or notification) or an id (response)';
    const hasResult = 'result' in value;
    const hasError = 'error' in value;
    if (hasResult === hasError) return 'a response has exactly one of result and error';
    if (hasError && (!isObject(value.error) || typeof value.error.code !== 'number' || typeof value.error.message !== 'string')) {
      return 'error must be an object with a numeric code and a string message';
    }
    if (hasResult && !isObject(value.result)) return 'result must be an object';
    return undefined;
  }
  if (typeof value.method !== 'string') return 'method must be a string';
  if ('params' in value) {
    if (!isObject(value.params)) return 'params must be an object';
    const meta = value.params._meta;
    if (meta !== undefined && !isObject(meta)) return 'params._meta must be an object';
    if (isObject(meta) && meta.progressToken !== undefined && !isId(meta.progressToken)) return 'params._meta.progressToken must be a string or an integer';
  }
  return undefined;
}

/** A JSON-RPC error response as a web `Response`. */
export function errorResponse(status: number, id: Id | null, code: number, message: string, data?: unknown, headers?: Record<string, string>): Response {
  const error: Record<string, unknown> = { code, message };
  if (data !== undefined) error.data = data;
  return new Response(JSON.stringify({ jsonrpc: '2.0', id, error }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** The JSON-RPC error of a call refused or stopped because the server shuts down (-32603, `data.code` `SHUTTING_DOWN`, as core's `refuse`). */
export function shuttingDownError(message: string, extra?: Record<string, unknown>): { code: number; message: string; data: Record<string, unknown> } {
  return { code: JsonRpcErrorCode.InternalError, message, data: { code: ErrorCode.SHUTTING_DOWN, ...extra } };
}
