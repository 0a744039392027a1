/**
 * @mcp-tether/testing/matrix — run one wire test file against every SDK line and era:
 *
 * | target      | server                                    | client                              | wire                 |
 * |-------------|-------------------------------------------|-------------------------------------|----------------------|
 * | `v1`        | `@modelcontextprotocol/sdk` 1.x McpServer | v1 `Client`, in memory              | 2025-11-25 session   |
 * | `v2-legacy` | `@modelcontextprotocol/server` McpServer  | v2 `Client`, in memory              | 2025-11-25 session   |
 * | `v2-modern` | v2 McpServer, one per request             | v2 `Client` pinned to 2026-07-28, `createMcpHandler` in process | 2026-07-28 stateless |
 *
 * ```ts
 * import { describeEachSdk } from '@mcp-tether/testing/matrix';
 *
 * describeEachSdk('progress', (sdk) => {
 *   it('sends progress', async () => {
 *     const kit = await sdk.connect(() => {
 *       const server = tether(sdk.createServer(), [progress()]);
 *       server.registerTool('job', { inputSchema: { n: z.number() } }, handler(async function* (args) { ... }));
 *       return server;
 *     });
 *     await kit.callTool('job', { n: 1 }, { progressToken: 't' });
 *     expect(kit.wire.progress('t').length).toBeGreaterThan(0);
 *     await kit.close();
 *   });
 *   it.skipIf(sdk.era === 'modern')('answers ping', ...);
 * });
 * ```
 *
 * Set `TETHER_SDK=v1,v2-modern` (comma-separated target names) to run a subset.
 * Needs both SDK lines and vitest installed (devDependencies).
 */
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { describe } from 'vitest';
import { type Era, type MiddlewareLike, tether } from '@mcp-tether/core';
import { connect, type CallOptions, type StartedCall } from './index.js';
import { connectV2 } from './v2.js';
import type { RawCallOptions } from './raw.js';
import type { WireLog } from './wire.js';

/** The name of one matrix target. */
export type SdkTargetName = 'v1' | 'v2-legacy' | 'v2-modern';

/** Tool config accepted by both SDK lines: a zod raw shape (`{ n: z.number() }`) or a zod object as `inputSchema`. */
export interface MatrixToolConfig {
  title?: string;
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/**
 * The part of `McpServer` both SDK lines share, loosely typed so one test body serves both.
 * (Use `handler()` from `@mcp-tether/core` for typed callbacks against a concrete SDK.)
 */
export interface MatrixServer {
  registerTool(name: string, config: MatrixToolConfig, cb: (...args: any[]) => unknown): any;
  registerPrompt(name: string, config: Record<string, unknown>, cb: (...args: any[]) => unknown): any;
  registerResource(name: string, uri: any, config: Record<string, unknown>, cb: (...args: any[]) => unknown): any;
  connect(transport: any): Promise<void>;
  close(): Promise<void>;
  /** The low-level SDK `Server`. */
  readonly server: any;
}

/** Builds a (tethered) server. Called once on legacy targets and once per HTTP request on `v2-modern`. */
export type MatrixFactory = () => MatrixServer | Promise<MatrixServer>;

/** An elicitation answer. */
export interface MatrixElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Options of {@link SdkTarget.connect}. */
export interface MatrixConnectOptions {
  /** Client capabilities; form elicitation is added when `elicit` is given and this is not. */
  capabilities?: Record<string, unknown>;
  /**
   * Answer elicitations: a list used in order (the last repeats), or a function. Legacy targets
   * get them as `elicitation/create` requests; `v2-modern` as `inputRequests` the client fulfils.
   */
  elicit?:
    | MatrixElicitResult[]
    | ((params: any, info: { index: number; signal: AbortSignal }) => MatrixElicitResult | Promise<MatrixElicitResult>);
  /** Legacy targets: emulate a sessionful transport with this session id. */
  sessionId?: string;
  /** Client name/version. */
  clientInfo?: { name: string; version: string };
}

/** One elicitation the client received. */
export interface MatrixElicitation {
  params: any;
  requestId: string | number;
  signal: AbortSignal;
  answer?: MatrixElicitResult;
}

/** A connected client, the same API on every target. */
export interface MatrixClient {
  readonly sdk: 'v1' | 'v2';
  readonly era: Era;
  /** The real SDK client (v1 or v2 `Client`). */
  readonly client: any;
  /** Every message, both directions, with timestamps (and the HTTP stream on `v2-modern`). */
  readonly wire: WireLog;
  readonly elicitations: MatrixElicitation[];
  readonly clientErrors: Error[];
  /** Call a tool through the SDK client. On `v2-modern`, input_required rounds are fulfilled by the client. */
  callTool(name: string, args?: Record<string, unknown>, options?: CallOptions): Promise<any>;
  /** A raw `tools/call` with the id you choose. */
  start(name: string, args?: Record<string, unknown>, options?: RawCallOptions): StartedCall;
  /** Cancel a request the era's way: `notifications/cancelled` (legacy) or closing its response stream (modern). */
  cancel(requestId: string | number, reason?: string): Promise<void>;
  /** Write any JSON-RPC message. */
  sendRaw(message: Record<string, unknown>): Promise<void>;
  /** Liveness: `ping` (legacy) or `server/discover` (modern, which has no ping). */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** One SDK line and protocol era to run tests against. */
export interface SdkTarget {
  readonly name: SdkTargetName;
  readonly sdk: 'v1' | 'v2';
  readonly era: Era;
  /** Whether server→client requests (elicitation/create, ping) can reach the client during a call. */
  readonly channel: boolean;
  /** A fresh, un-tethered `McpServer` of this SDK line. */
  createServer(info?: { name: string; version: string }, options?: Record<string, unknown>): MatrixServer;
  /**
   * Connect a real client of the same SDK line.
   * @param server a factory (every target), or a server instance (legacy targets only: `v2-modern`
   *   serves each request on a fresh server and throws a TypeError for an instance)
   */
  connect(server: MatrixServer | MatrixFactory, options?: MatrixConnectOptions): Promise<MatrixClient>;
}

const DEFAULT_INFO = { name: 'tether-test-server', version: '0.0.0' };

const v1: SdkTarget = {
  name: 'v1',
  sdk: 'v1',
  era: 'legacy',
  channel: true,
  createServer: (info = DEFAULT_INFO, options) => new McpServerV1(info, options as never) as unknown as MatrixServer,
  connect: async (server, options = {}) => {
    const instance = typeof server === 'function' ? await server() : server;
    const kit = await connect(instance as never, options as never);
    return { ...kit, sdk: 'v1', era: 'legacy' } as unknown as MatrixClient;
  },
};

const v2Target = (era: Era): SdkTarget => ({
  name: era === 'modern' ? 'v2-modern' : 'v2-legacy',
  sdk: 'v2',
  era,
  channel: era === 'legacy',
  createServer: (info = DEFAULT_INFO, options) => new McpServerV2(info, options as never) as unknown as MatrixServer,
  connect: async (server, options = {}) => {
    if (era === 'modern' && typeof server !== 'function') {
      throw new TypeError(
        'sdk.connect: the v2-modern target serves every request on a fresh server; pass a factory (() => server), not a server',
      );
    }
    const kit = await connectV2(server as never, { ...(options as object), era });
    return kit as unknown as MatrixClient;
  },
});

/** Every target, in the order the matrix runs them. */
export const SDK_TARGETS: readonly SdkTarget[] = [v1, v2Target('legacy'), v2Target('modern')];

/** Options of {@link describeEachSdk}. */
export interface DescribeEachSdkOptions {
  /** Only these targets. */
  only?: readonly SdkTargetName[];
  /** Only targets of these eras. */
  eras?: readonly Era[];
}

/** The targets selected by `options` and the `TETHER_SDK` environment variable. */
export function sdkTargets(options: DescribeEachSdkOptions = {}): SdkTarget[] {
  const env = typeof process !== 'undefined' ? process.env.TETHER_SDK : undefined;
  const fromEnv = env
    ? new Set(
        env
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
    : undefined;
  return SDK_TARGETS.filter(
    (t) =>
      (!options.only || options.only.includes(t.name)) &&
      (!options.eras || options.eras.includes(t.era)) &&
      (!fromEnv || fromEnv.has(t.name)),
  );
}

/**
 * `describe(title [target])` once per selected target; `fn` gets the target and registers tests
 * with vitest's `it`/`test`. Use `it.skipIf(sdk.era === 'modern')` for era-specific behaviour.
 */
export function describeEachSdk(title: string, fn: (sdk: SdkTarget) => void, options?: DescribeEachSdkOptions): void {
  for (const target of sdkTargets(options)) describe(`${title} [${target.name}]`, () => fn(target));
}

/** What {@link tetheredServer} returns. */
export interface TetheredServer {
  /** The target's `McpServer`, wrapped with `tether()`. */
  server: MatrixServer;
  /**
   * Errors reported while it served: tether's `onError` (middleware event hooks, sending) and the
   * low-level SDK server's `onerror`. The same array that was passed in; a test usually asserts it
   * stays empty.
   */
  errors: unknown[];
}

/**
 * A fresh `McpServer` of `sdk`'s line with `middlewares` attached through `tether()`, whose
 * SDK-level errors are collected instead of logged. Call it inside a {@link MatrixFactory} so that
 * `v2-modern` gets a fresh server per request.
 *
 * ```ts
 * describeEachSdk('my middleware', (sdk) => {
 *   it('serves a call', async () => {
 *     const errors: unknown[] = [];
 *     const kit = await sdk.connect(() => {
 *       const { server } = tetheredServer(sdk, [myMiddleware()], errors);
 *       server.registerTool('echo', { inputSchema: { s: z.string() } }, async ({ s }) => ({ content: [{ type: 'text', text: s }] }));
 *       return server;
 *     });
 *     expect(firstText(await kit.callTool('echo', { s: 'hi' }))).toBe('hi');
 *     expect(errors).toEqual([]);
 *     await kit.close();
 *   });
 * });
 * ```
 *
 * @param sdk the matrix target whose SDK line builds the server
 * @param middlewares attached in order, outermost first (as `tether()` takes them)
 * @param errors where errors are pushed (default: a new array, returned as `errors`)
 * @param info the server's `name` and `version` (default `tether-test-server` `0.0.0`)
 * @throws whatever `tether()` throws (e.g. a middleware's `setup` failing)
 */
export function tetheredServer(
  sdk: SdkTarget,
  middlewares: readonly MiddlewareLike[],
  errors: unknown[] = [],
  info?: { name: string; version: string },
): TetheredServer {
  const mcp = sdk.createServer(info);
  const server = tether(mcp, middlewares, { onError: (e) => errors.push(e) });
  mcp.server.onerror = (e: unknown) => errors.push(e);
  return { server, errors };
}
