/** JSON-RPC envelopes as the front sorts them, and the error responses it answers with (envelope checks: core's `jsonRpcProblem`). */
import { ErrorCode, isRequestId, JsonRpcErrorCode } from '@mcp-tether/core';

export type Id = string | number;
export type Message = Record<string, unknown>;

/** A request (has an id and a method). */
export function isRequest(m: Message): boolean {
  return typeof m.method === 'string' && m.id !== undefined;
}

/** A response (has an id, no method). */
export function isResponse(m: Message): boolean {
  return m.method === undefined && m.id !== undefined && ('result' in m || 'error' in m);
}

/** A JSON-RPC error response as a web `Response`. */
export function errorResponse(
  status: number,
  id: Id | null,
  code: number,
  message: string,
  data?: unknown,
  headers?: Record<string, string>,
): Response {
  const error: Record<string, unknown> = { code, message };
  if (data !== undefined) error.data = data;
  return new Response(JSON.stringify({ jsonrpc: '2.0', id, error }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** The JSON-RPC error of a call refused or stopped because the server shuts down (-32603, `data.code` `SHUTTING_DOWN`, as core's `refuse`). */
export function shuttingDownError(
  message: string,
  extra?: Record<string, unknown>,
): { code: number; message: string; data: Record<string, unknown> } {
  return { code: JsonRpcErrorCode.InternalError, message, data: { code: ErrorCode.SHUTTING_DOWN, ...extra } };
}

/** HTTP 503 with a `SHUTTING_DOWN` JSON-RPC error: no new sessions, calls or streams once shutdown began. */
export function shuttingDownResponse(id: Id | null): Response {
  const e = shuttingDownError('The server is shutting down and takes no new sessions or calls. Try again later.');
  return errorResponse(503, id, e.code, e.message, e.data, { 'retry-after': '1', connection: 'close' });
}

/**
 * Whether JSON `text` nests arrays and objects deeper than `max` levels, found by one pass over the
 * text (no recursion, no parse). Text shorter than `max` cannot, and is not scanned.
 */
export function nestsDeeper(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return false;
}

/**
 * The `id` of a single JSON-RPC message in `text` (a string or a number at the top level of one
 * object), read without parsing the rest: for the answer to a message refused before its parse (too
 * deep). `null` when there is none, or for a batch.
 */
export function topLevelId(text: string): Id | null {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const end = stringEnd(text, i);
      if (end < 0) return null;
      if (depth === 1 && text.slice(i, end + 1) === '"id"') {
        let j = end + 1;
        while (j < text.length && isSpace(text.charCodeAt(j))) j++;
        if (text.charCodeAt(j) === 58 /* : */) return idValue(text, j + 1);
      }
      i = end;
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (depth === 0 && c === 91) return null; // a batch: no one id
      depth++;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return null;
}

/** Index of the quote closing the string that opens at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 92 /* \ */) i++;
    else if (c === 34) return i;
  }
  return -1;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

/** A string or number id starting at `from` (after spaces), or null. */
function idValue(text: string, from: number): Id | null {
  let i = from;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  let end: number;
  if (text.charCodeAt(i) === 34) end = stringEnd(text, i) + 1;
  else {
    end = i;
    while (end < text.length && /[-+.0-9eE]/.test(text[end]!)) end++;
  }
  if (end <= i) return null;
  try {
    const v: unknown = JSON.parse(text.slice(i, end));
    return isRequestId(v) ? v : null; // the same test as for a parsed message's id
  } catch {
    return null;
  }
}

/** What a request (or refusal) whose client left while it waited for its turn gets (nobody reads it). */
export function clientGone(): Response {
  return errorResponse(499, null, -32000, 'Client Closed Request: the client left before its request started');
}
