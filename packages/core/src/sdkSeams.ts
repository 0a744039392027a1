/**
 * The private SDK fields ("seams") tether relies on, in one table for every package that touches
 * them (core's adapters, the http front, the client wrapper), checked when each attaches
 * (`tether()`, `createMcpHttp()`, `tetherClient()`): an SDK release that renamed one fails at once,
 * loudly, naming the installed SDK version and the missing fields, instead of misbehaving later or
 * quietly switching a feature off (a cancel ignored, a response not suppressed, an unbounded stream).
 *
 * A package adds the fields it needs to {@link SDK_SEAMS} (one entry per SDK object it reads) and
 * calls {@link assertSeams} with that entry and the object, where it first gets hold of it. Cost: a
 * few property reads per attach; the SDK's `package.json` is read only when something is missing.
 */

/**
 * The shape a seam must have: `instanceof Map`/`Set`, a non-null object, a `typeof`, or `field`: a
 * declared property whatever its value (a class field that stays `undefined` until first use).
 */
export type SeamKind = 'Map' | 'Set' | 'function' | 'number' | 'object' | 'boolean' | 'field';

/** One field: a dotted path from the checked object, its shape, and what relies on it. */
export interface Seam {
  readonly path: string;
  readonly kind: SeamKind;
  readonly use: string;
}

/** The SDK packages tether supports, as declared in its peer dependencies, and the versions tested. */
export const SUPPORTED_SDKS = {
  v1: { name: '@modelcontextprotocol/sdk', range: '^1.30.0', tested: ['1.30.0', '1.32.2'] },
  v2: { name: '@modelcontextprotocol/server', range: '^2.4.0', tested: ['2.4.0'] },
  'v2-client': { name: '@modelcontextprotocol/client', range: '^2.4.0', tested: ['2.4.0'] },
} as const;

/** An SDK object whose private fields some package reads. */
export interface SeamTarget {
  /** What the object is, as a user would name it (`McpServer`, `Client`, ...). */
  readonly label: string;
  /** The SDK package it comes from. */
  readonly sdk: keyof typeof SUPPORTED_SDKS;
  /** The tether package that reads the fields. */
  readonly user: string;
  readonly seams: readonly Seam[];
}

const seam = (path: string, kind: SeamKind, use: string): Seam => ({ path, kind, use });

const MCP_SERVER_COMMON = [
  seam('_registeredTools', 'object', 'tool annotations and callbacks registered before tether()'),
  seam('_createRegisteredTool', 'function', 'wrap the executor of every tool registered'),
  seam('server._requestHandlers', 'Map', 'wrap handlers installed before tether() (initialize, tools/*)'),
  seam('server._requestHandlerAbortControllers', 'Map', "suppress an aborted call's response"),
  seam('server._requestMessageId', 'number', 'start outbound request ids at 1 (a 1.x client cannot cancel id 0)'),
  seam('server._onrequest', 'function', 'see each request before the SDK routes it'),
  seam('server._onclose', 'function', 'abort calls in flight when the connection closes'),
  seam('server._onerror', 'function', "report a middleware's fault"),
] as const;

const WEB_TRANSPORT = [
  seam('writeSSEEvent', 'function', 'bound each stream where the transport writes it'),
  seam('_requestToStreamMapping', 'Map', "end a cancelled call's stream"),
  seam('_streamMapping', 'Map', "end a cancelled call's stream"),
  seam('_requestResponseMap', 'Map', "forget a cancelled call's pending response"),
  seam('_closed', 'boolean', 'drop what a closing session still holds'),
] as const;

const CLIENT = [
  seam('_notificationHandlers', 'Map', 'route progress by our own token, so the final notification is never lost'),
  seam('_requestHandlers', 'Map', "pause a call's timers while the user answers an elicitation"),
] as const;

/**
 * Every private SDK field a tether package reads, by the object it reads it from. Tested against
 * the lowest and the highest SDK version of each declared range (core's `sdk-seams` tests).
 */
export const SDK_SEAMS = {
  /** `McpServer` of `@modelcontextprotocol/sdk` 1.x (core's v1 adapter). */
  mcpServerV1: {
    label: 'McpServer',
    sdk: 'v1',
    user: '@mcp-tether/core',
    seams: [
      ...MCP_SERVER_COMMON,
      seam('server._notificationHandlers', 'Map', "keep the client's cancel reason; refuse cancelling initialize"),
    ],
  },
  /** `McpServer` of `@modelcontextprotocol/server` 2.x (core's v2 adapter). */
  mcpServerV2: {
    label: 'McpServer',
    sdk: 'v2',
    user: '@mcp-tether/core',
    seams: [
      ...MCP_SERVER_COMMON,
      seam('setToolRequestHandlers', 'function', 'install tools/* before the first registration'),
      seam('setResourceRequestHandlers', 'function', 'install resources/* before the first registration'),
      seam('setPromptRequestHandlers', 'function', 'install prompts/* before the first registration'),
      seam('_toolHandlersInitialized', 'boolean', 'know whether tools/* is installed'),
      seam('_resourceHandlersInitialized', 'boolean', 'know whether resources/* is installed'),
      seam('_promptHandlersInitialized', 'boolean', 'know whether prompts/* is installed'),
      seam('server._wrapHandler', 'function', 'run inside the SDK input_required (MRTR) seam'),
    ],
  },
  /**
   * `WebStandardStreamableHTTPServerTransport` of either line (the http front's 2025-era sessions):
   * the front bounds each stream where the transport writes it, and ends a cancelled call's stream.
   */
  webTransportV1: {
    label: 'WebStandardStreamableHTTPServerTransport',
    sdk: 'v1',
    user: '@mcp-tether/http',
    // 2.x keeps no such set (its replay does not look one up): only 1.x has it to forget.
    seams: [...WEB_TRANSPORT, seam('_resumableStreams', 'Set', "forget a cancelled call's stream for replay")],
  },
  webTransportV2: {
    label: 'WebStandardStreamableHTTPServerTransport',
    sdk: 'v2',
    user: '@mcp-tether/http',
    seams: WEB_TRANSPORT,
  },
  /** SDK 2.x `PerRequestHTTPServerTransport` (the http front's 2026-07-28 exchanges). */
  perRequestTransportV2: {
    label: 'PerRequestHTTPServerTransport',
    sdk: 'v2',
    user: '@mcp-tether/http',
    seams: [
      seam('writeMessageFrame', 'function', "bound a 2026 exchange's stream"),
      seam('finalizeStream', 'function', 'flush what the bounded stream holds before it ends'),
      seam('_sse', 'field', "read how much the exchange's stream holds"),
    ],
  },
  /** `Client` of `@modelcontextprotocol/sdk` 1.x (tetherClient). */
  clientV1: { label: 'Client', sdk: 'v1', user: '@mcp-tether/client', seams: CLIENT },
  /** `Client` of `@modelcontextprotocol/client` 2.x (tetherClient). */
  clientV2: { label: 'Client', sdk: 'v2-client', user: '@mcp-tether/client', seams: CLIENT },
} as const satisfies Record<string, SeamTarget>;

/** The name of an entry of {@link SDK_SEAMS}. */
export type SeamTargetName = keyof typeof SDK_SEAMS;

/** An SDK object lacks a private field a tether package relies on (an SDK release renamed it). */
export class SdkSeamError extends Error {
  override readonly name = 'SdkSeamError';
  constructor(
    /** The SDK package, e.g. `@modelcontextprotocol/sdk`. */
    readonly sdk: string,
    /** Its installed version, when it can be read. */
    readonly version: string | undefined,
    /** The missing fields, as `Label.path (kind)`. */
    readonly missing: readonly string[],
    message: string,
  ) {
    super(message);
  }
}

const has = (value: unknown, kind: SeamKind): boolean =>
  kind === 'field'
    ? value !== ABSENT
    : kind === 'Map'
      ? value instanceof Map
      : kind === 'Set'
        ? value instanceof Set
        : kind === 'object'
          ? typeof value === 'object' && value !== null
          : typeof value === kind;

const ABSENT = Symbol('absent');

/** The value at a dotted path, or {@link ABSENT} when a key on the way is not there at all. */
function read(target: unknown, path: string): unknown {
  let value = target;
  for (const key of path.split('.')) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function') || !(key in value)) return ABSENT;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * The fields of entry `name` that `target` lacks (or has with another shape), as
 * `Label.path (kind)`; empty when it has them all.
 */
export function missingSeams(name: SeamTargetName, target: unknown): string[] {
  const entry: SeamTarget = SDK_SEAMS[name];
  const missing: string[] = [];
  for (const s of entry.seams)
    if (!has(read(target, s.path), s.kind)) missing.push(`${entry.label}.${s.path} (${s.kind})`);
  return missing;
}

/**
 * Check that `target` (an object of the SDK named by entry `name`) has every field that entry lists.
 *
 * @throws SdkSeamError naming the SDK package and its installed version, the missing fields, the
 *   package relying on them, and the supported ranges
 */
export function assertSeams(name: SeamTargetName, target: unknown): void {
  const missing = missingSeams(name, target);
  if (missing.length === 0) return;
  const entry: SeamTarget = SDK_SEAMS[name];
  const sdk = SUPPORTED_SDKS[entry.sdk];
  const version = installedVersion(sdk.name);
  const supported = Object.values(SUPPORTED_SDKS)
    .map((s) => `${s.name} ${s.range} (tested ${s.tested.join(', ')})`)
    .join(', ');
  throw new SdkSeamError(
    sdk.name,
    version,
    missing,
    `mcp-tether: unsupported ${sdk.name} version ${version ?? '(version not found)'}: this ${entry.label} lacks ` +
      `${missing.join(', ')}, which ${entry.user} relies on. Supported: ${supported}; install a tested ` +
      'version, or report the new one.',
  );
}

/** The version of `pkg` as the process resolves it (from the working directory), if it can be read. */
export function installedVersion(pkg: string): string | undefined {
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

/**
 * Which SDK line `server` comes from, judged by public members only (so that a missing private
 * field is reported as such), or undefined when it is no `McpServer` at all.
 */
export function mcpServerLine(server: unknown): 'v1' | 'v2' | undefined {
  const mcp = server as {
    registerTool?: unknown;
    server?: { setRequestHandler?: unknown; getNegotiatedProtocolVersion?: unknown };
  };
  if (typeof mcp?.registerTool !== 'function' || typeof mcp.server !== 'object' || mcp.server === null)
    return undefined;
  if (typeof mcp.server.setRequestHandler !== 'function') return undefined;
  return typeof mcp.server.getNegotiatedProtocolVersion === 'function' ? 'v2' : 'v1';
}

/**
 * `tether()`'s check: an `McpServer` of either line must have its line's seams; anything else passes
 * (`tether()` then says it expects an McpServer).
 *
 * @throws SdkSeamError as {@link assertSeams}
 */
export function assertSdkSeams(server: unknown): void {
  const line = mcpServerLine(server);
  if (line !== undefined) assertSeams(line === 'v1' ? 'mcpServerV1' : 'mcpServerV2', server);
}
