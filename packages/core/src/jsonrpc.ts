/**
 * JSON-RPC 2.0 envelope checks as MCP narrows them, shared by every transport front (core's stdio
 * hardening, `@mcp-tether/http`): they name the first problem found so a refusal can say it.
 */

/** A JSON-RPC id (or progress token) MCP accepts: a string or a safe integer, never null. */
export function isRequestId(v: unknown): v is string | number {
  return typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Why `value` is not a JSON-RPC 2.0 request, notification or response (the first problem found),
 * or undefined when it is one. Rules of JSON-RPC 2.0 §4–5 as MCP narrows them: ids are strings or
 * integers (never null), `params` and `params._meta` are objects, a progress token is a string or
 * an integer, a response has exactly one of `result` (an object) and `error` (numeric `code`,
 * string `message`). With `responses: false` a message without a method is refused as
 * `method must be a string` (a front that only takes requests and notifications). Batches
 * (arrays) are not messages.
 */
export function jsonRpcProblem(value: unknown, { responses = true }: { responses?: boolean } = {}): string | undefined {
  if (!isPlainObject(value)) return 'a message must be a JSON object';
  if (value.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  if ('id' in value && !isRequestId(value.id)) return 'id must be a string or an integer';
  if (value.method === undefined && responses) {
    if (!('id' in value)) return 'a message needs a method (request or notification) or an id (response)';
    const hasResult = 'result' in value;
    const hasError = 'error' in value;
    if (hasResult === hasError) return 'a response has exactly one of result and error';
    if (
      hasError &&
      (!isPlainObject(value.error) || typeof value.error.code !== 'number' || typeof value.error.message !== 'string')
    ) {
      return 'error must be an object with a numeric code and a string message';
    }
    if (hasResult && !isPlainObject(value.result)) return 'result must be an object';
    return undefined;
  }
  if (typeof value.method !== 'string') return 'method must be a string';
  if ('params' in value) {
    if (!isPlainObject(value.params)) return 'params must be an object';
    const meta = value.params._meta;
    if (meta !== undefined && !isPlainObject(meta)) return 'params._meta must be an object';
    if (isPlainObject(meta) && meta.progressToken !== undefined && !isRequestId(meta.progressToken))
      return 'params._meta.progressToken must be a string or an integer';
  }
  return undefined;
}
