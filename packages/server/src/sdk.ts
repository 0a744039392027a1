/**
 * The SDK lines installed beside the preset, loaded on first use: `@modelcontextprotocol/sdk` 1.x
 * (2025-era sessions) and `@modelcontextprotocol/server` 2.x (2025-era sessions and 2026-07-28
 * requests). Both are optional peers; at least one must be installed.
 */

/** An `McpServer` constructor of either line (both take `(info, options)`). */
// biome-ignore lint/suspicious/noExplicitAny: the two SDK lines' McpServer types differ; the preset registers through one loose face
export type McpServerClass = new (info: { name: string; version: string }, options?: any) => any;

/** What the preset uses of the installed SDK lines. */
export interface Sdks {
  /** SDK 1.x, when installed. */
  readonly v1?: {
    readonly McpServer: McpServerClass;
    // biome-ignore lint/suspicious/noExplicitAny: SDK transport
    readonly StdioServerTransport: new () => any;
  };
  /** SDK 2.x, when installed. */
  readonly v2?: {
    readonly McpServer: McpServerClass;
    // biome-ignore lint/suspicious/noExplicitAny: SDK factory type
    readonly serveStdio: (
      factory: () => any,
      options?: { onerror?: (e: Error) => void },
    ) => {
      close(): Promise<void>;
    };
  };
}

function missing(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

async function optional<T>(load: () => Promise<T>): Promise<T | undefined> {
  try {
    return await load();
  } catch (error) {
    if (missing(error)) return undefined;
    throw error;
  }
}

let loaded: Promise<Sdks> | undefined;

/**
 * Load the installed SDK lines (once per process).
 * @throws Error when neither `@modelcontextprotocol/sdk` nor `@modelcontextprotocol/server` is installed
 */
export function loadSdks(): Promise<Sdks> {
  loaded ??= (async () => {
    const [mcp, stdio, v2, v2stdio] = await Promise.all([
      optional(() => import('@modelcontextprotocol/sdk/server/mcp.js')),
      optional(() => import('@modelcontextprotocol/sdk/server/stdio.js')),
      optional(() => import('@modelcontextprotocol/server')),
      optional(() => import('@modelcontextprotocol/server/stdio')),
    ]);
    const sdks: Sdks = {
      ...(mcp &&
        stdio && {
          v1: {
            McpServer: mcp.McpServer as McpServerClass,
            StdioServerTransport: stdio.StdioServerTransport as new () => unknown,
          },
        }),
      ...(v2 &&
        v2stdio && {
          v2: { McpServer: v2.McpServer as McpServerClass, serveStdio: v2stdio.serveStdio as never },
        }),
    };
    if (!sdks.v1 && !sdks.v2)
      throw new Error(
        '@mcp-tether/server: install an MCP SDK beside it: @modelcontextprotocol/sdk (1.x, 2025-era sessions) and/or @modelcontextprotocol/server (2.x, also 2026-07-28 requests)',
      );
    return sdks;
  })();
  loaded.catch(() => {
    loaded = undefined;
  });
  return loaded;
}
