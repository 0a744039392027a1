/**
 * The private SDK fields ("seams") the adapters rely on, checked once per `tether()` call, so that
 * an SDK release that renamed one fails at once with a message naming the installed SDK version,
 * instead of misbehaving later (a cancel ignored, a response not suppressed, a handler unwrapped).
 *
 * Only the fields of the `McpServer` and its `Server` are checked here (transports are not known
 * when `tether()` runs; the stdio hardening checks its own fields and leaves a transport it does
 * not recognise as it is). Cost: a few property reads per attached server; the SDK's
 * `package.json` is read only when something is missing.
 */

type Kind = 'Map' | 'function' | 'number' | 'object' | 'boolean';
type Seam = readonly [owner: 'mcp' | 'server', field: string, kind: Kind];

/** Tested with 1.30.0 (the lowest of the declared range) and 1.32.2. */
const V1: readonly Seam[] = [
  ['mcp', '_registeredTools', 'object'],
  ['mcp', '_createRegisteredTool', 'function'],
  ['server', '_requestHandlers', 'Map'],
  ['server', '_notificationHandlers', 'Map'],
  ['server', '_requestHandlerAbortControllers', 'Map'],
  ['server', '_requestMessageId', 'number'],
  ['server', '_onrequest', 'function'],
  ['server', '_onclose', 'function'],
  ['server', '_onerror', 'function'],
];

/** Tested with 2.4.0 (the lowest of the declared range). */
const V2: readonly Seam[] = [
  ['mcp', '_registeredTools', 'object'],
  ['mcp', '_createRegisteredTool', 'function'],
  ['mcp', 'setToolRequestHandlers', 'function'],
  ['mcp', 'setResourceRequestHandlers', 'function'],
  ['mcp', 'setPromptRequestHandlers', 'function'],
  ['mcp', '_toolHandlersInitialized', 'boolean'],
  ['mcp', '_resourceHandlersInitialized', 'boolean'],
  ['mcp', '_promptHandlersInitialized', 'boolean'],
  ['server', '_requestHandlers', 'Map'],
  ['server', '_requestHandlerAbortControllers', 'Map'],
  ['server', '_requestMessageId', 'number'],
  ['server', '_wrapHandler', 'function'],
  ['server', '_onrequest', 'function'],
  ['server', '_onclose', 'function'],
  ['server', '_onerror', 'function'],
];

/** The SDK lines tether supports, as declared in its peer dependencies, and the versions tested. */
export const SUPPORTED_SDKS = {
  v1: { name: '@modelcontextprotocol/sdk', range: '^1.30.0', tested: ['1.30.0', '1.32.2'] },
  v2: { name: '@modelcontextprotocol/server', range: '^2.4.0', tested: ['2.4.0'] },
} as const;

const has = (value: unknown, kind: Kind): boolean =>
  kind === 'Map'
    ? value instanceof Map
    : kind === 'object'
      ? typeof value === 'object' && value !== null
      : typeof value === kind;

/**
 * Which SDK line `server` comes from, judged by public members only (so that a missing private
 * field is reported as such), or undefined when it is no `McpServer` at all.
 */
function sdkLine(server: unknown): 'v1' | 'v2' | undefined {
  const mcp = server as {
    registerTool?: unknown;
    tool?: unknown;
    server?: { setRequestHandler?: unknown; getNegotiatedProtocolVersion?: unknown };
  };
  if (typeof mcp?.registerTool !== 'function' || typeof mcp.server !== 'object' || mcp.server === null)
    return undefined;
  if (typeof mcp.server.setRequestHandler !== 'function') return undefined;
  if (typeof mcp.server.getNegotiatedProtocolVersion === 'function') return 'v2';
  return 'v1';
}

/**
 * Throw when `server` is an `McpServer` of either SDK line that lacks a private field the adapters
 * use; do nothing for a complete one, and for anything that is no `McpServer` (`tether()` says so).
 *
 * @throws Error naming the SDK package and its installed version, the missing fields, and the
 *   supported ranges
 */
export function assertSdkSeams(server: unknown): void {
  const line = sdkLine(server);
  if (line === undefined) return;
  const owners = {
    mcp: server as Record<string, unknown>,
    server: (server as { server: Record<string, unknown> }).server,
  };
  let missing: string[] | undefined;
  for (const [owner, field, kind] of line === 'v1' ? V1 : V2) {
    if (has(owners[owner][field], kind)) continue;
    missing ??= [];
    missing.push(`${owner === 'mcp' ? 'McpServer' : 'McpServer.server'}.${field} (${kind})`);
  }
  if (missing === undefined) return;
  const sdk = SUPPORTED_SDKS[line];
  const version = installedVersion(sdk.name);
  throw new Error(
    `mcp-tether: unsupported ${sdk.name} version ${version ?? '(version not found)'}: this McpServer lacks ` +
      `${missing.join(', ')}, which tether relies on. Supported: ${SUPPORTED_SDKS.v1.name} ${SUPPORTED_SDKS.v1.range} ` +
      `(tested ${SUPPORTED_SDKS.v1.tested.join(', ')}) and ${SUPPORTED_SDKS.v2.name} ${SUPPORTED_SDKS.v2.range} ` +
      `(tested ${SUPPORTED_SDKS.v2.tested.join(', ')}); install a tested version, or report the new one.`,
  );
}

/** The version of `pkg` as the process resolves it (from the working directory), if it can be read. */
function installedVersion(pkg: string): string | undefined {
  try {
    const nodeModule = process.getBuiltinModule?.('node:module') as typeof import('node:module') | undefined;
    const fs = process.getBuiltinModule?.('node:fs') as typeof import('node:fs') | undefined;
    const path = process.getBuiltinModule?.('node:path') as typeof import('node:path') | undefined;
    if (!nodeModule || !fs || !path) return undefined;
    const require = nodeModule.createRequire(path.join(process.cwd(), 'noop.js'));
    let dir = path.dirname(require.resolve(pkg === SUPPORTED_SDKS.v1.name ? `${pkg}/server/mcp.js` : pkg));
    for (let i = 0; i < 8; i++, dir = path.dirname(dir)) {
      const file = path.join(dir, 'package.json');
      if (!fs.existsSync(file)) continue;
      const manifest = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === pkg) return manifest.version;
    }
  } catch {
    /* not resolvable from here */
  }
  return undefined;
}
