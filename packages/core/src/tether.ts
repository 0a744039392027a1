import type { AttachOptions } from './adapters/attach.js';
import { attachV1, isV1McpServer } from './adapters/v1.js';
import { attachV2 } from './adapters/v2.js';
import { isV2McpServer } from './adapters/v2-sdk.js';
import { normalizeMiddlewares } from './engine.js';
import { assertSdkSeams } from './sdkSeams.js';
import type { MiddlewareLike } from './types.js';

export type { AttachOptions };

/**
 * Attach middlewares to an MCP server and return the same server, wrapped.
 *
 * Accepts an `McpServer` from either SDK line, told apart by shape (no SDK is imported here):
 * `@modelcontextprotocol/sdk` 1.x (protocol ≤ 2025-11-25) or `@modelcontextprotocol/server` 2.x
 * (2025-era sessions and 2026-07-28 requests; on HTTP call it inside the `createMcpHandler`
 * factory, which builds one server per request).
 *
 * ```ts
 * const server = tether(new McpServer({ name: 'x', version: '1.0.0' }), [cancel(), progress()]);
 * server.registerTool('job', { ... }, async function* (args, ctx) { yield progress(50); return { content: [] } });
 * ```
 *
 * - Order is list order: the first middleware is the outermost.
 * - Call it once per server instance (on HTTP: inside the per-session or per-request factory), before
 *   `connect()` (middlewares may declare capabilities). Tools, prompts and resources registered
 *   before or after attaching are all wrapped.
 * - Middleware instances may be shared by several servers (that is how a mutex or `drain()` spans
 *   sessions); per-call state lives in the call context.
 *
 * @throws Error if the server is not a supported SDK `McpServer` (an SDK release that lacks a
 *   private field tether relies on is named with its version), or was already attached.
 */
export function tether<S>(server: S, middlewares: ReadonlyArray<MiddlewareLike>, options?: AttachOptions): S {
  const list = normalizeMiddlewares(middlewares);
  assertSdkSeams(server);
  // v2 first: a v2 server also has everything the v1 check looks for.
  if (isV2McpServer(server)) return attachV2(server, list, options) as S;
  if (isV1McpServer(server)) return attachV1(server, list, options) as S;
  throw new TypeError(
    'mcp-tether: tether() expects an McpServer from @modelcontextprotocol/sdk (^1.30) or @modelcontextprotocol/server (^2.4). ' +
      'Pass the McpServer itself (not mcp.server).',
  );
}
