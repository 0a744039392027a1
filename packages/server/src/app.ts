/**
 * `createApp()`: the whole stack, assembled once per process, serving every registered tool over
 * Streamable HTTP (both eras on one endpoint) or stdio, with shared stores in memory or on Redis
 * and a graceful shutdown on SIGINT/SIGTERM.
 */
import { type Middleware, type ToolTable, tether, toolTable } from '@mcp-tether/core';
import { createMcpHttp, type Listening, type McpHttp, type McpHttpOptions } from '@mcp-tether/http';
import type { MrtrOptions } from '@mcp-tether/mrtr';
import type { z } from 'zod';
import { loadSdks, type Sdks } from './sdk.js';
import { installSignals } from './signals.js';
import { buildStack, type Stack, type StackSettings } from './stack.js';
import { memoryStores, redisStores, type Stores } from './stores.js';
import { type ToolConfig, type ToolHandler, Tools, type ZodShape } from './tools.js';

/** Options of {@link createApp}. Times in ms. */
export interface AppOptions {
  /** Announced in `initialize` / `server/discover`. Default `mcp-server`. */
  name?: string;
  /** Default `1.0.0`. */
  version?: string;
  /** `instructions` for the model. */
  instructions?: string;
  /**
   * Put every shared store (locks, jobs and their partial output and cancels, SSE events, one-time
   * `requestState`s) on this Redis. Default `process.env.REDIS_URL`; `false`: in this process even
   * when `REDIS_URL` is set.
   */
  redisUrl?: string | false;
  /** Prefix of every Redis key and channel. Default `tether:`. */
  redisPrefix?: string;
  /** Deadline of a call (a job: its inline phase). Default 600 000 (10 min). Per tool: `timeoutMs`. */
  timeoutMs?: number;
  /** A call with a progress token that sent nothing for this long gets a heartbeat. Default 10 000. */
  heartbeatMs?: number;
  /** How long a job tool runs inline before it answers with a job handle. Default `$TETHER_INLINE_MS`, else 20 000. */
  inlineMs?: number;
  /** How long a job and its result are kept. Default 3 600 000 (1 h). */
  jobTtlMs?: number;
  /** Waiters per lock before a `BUSY` refusal. Default 100. */
  maxQueue?: number;
  /** How long running calls get to finish on shutdown. Default 10 000. */
  shutdownGraceMs?: number;
  /** Shut down gracefully on SIGINT/SIGTERM, then exit. Default true. */
  handleSignals?: boolean;
  /** The SDK line that serves 2025-era sessions when both are installed. Default `'v1'`. */
  legacySdk?: 'v1' | 'v2';
  /** More `@mcp-tether/http` options (`authenticate`, `allowedHosts`, `allowedOrigins`, `maxSessions`, ...). */
  http?: Omit<McpHttpOptions, 'legacy' | 'modern'>;
  /** More `mrtr()` options: `keys` (default `$MRTR_KEYS`, needed by several replicas), `timeoutMs`, `maxRounds`. */
  mrtr?: Omit<MrtrOptions, 'oneTime'>;
  /** Where startup and shutdown lines go. Default stderr; `false`: nowhere. */
  log?: ((line: string) => void) | false;
}

/** The `McpServer` builder of one SDK line (for tests and hand assembly). */
export type SdkLine = 'v1' | 'v2';

/** What {@link App.listen} returns. */
export interface Served {
  /** `http://127.0.0.1:3000/mcp` */
  readonly url: URL;
  readonly port: number;
  /** The HTTP front (`notify`, `stats`, `sessions()`). */
  readonly http: McpHttp;
}

/** An application: tools, middleware, and how it is served. */
export interface App {
  /**
   * Register a tool once; every session and request of both eras serves it. `config` is the SDK's
   * (`inputSchema` a zod raw shape or `z.object`, `description`, `annotations`, ...) plus `lock`,
   * `job` and `timeoutMs`.
   * @throws TypeError for a bad name, a name taken, a bad option; Error after the app started
   */
  tool<S extends ZodShape | z.ZodObject = ZodShape>(name: string, config: ToolConfig<S>, handler: ToolHandler<S>): App;
  tool(name: string, handler: ToolHandler<ZodShape>): App;
  /**
   * Add your own middleware (core's `Middleware`), after the built-in outer layers (cancel, logs,
   * heartbeat, progress) and before the question, lock and job layers. Order of `use` = order.
   * @throws Error after the app started
   */
  use(middleware: Middleware | Middleware['handle']): App;
  /**
   * Serve Streamable HTTP on `http://host:port/path`: 2025-era sessions and 2026-07-28 requests on
   * one endpoint. Default port `$PORT`, else 3000; host `127.0.0.1`; path `/mcp`.
   */
  listen(port?: number, host?: string): Promise<Served>;
  /** Serve stdio (2025-era sessions; both eras when SDK 2.x is installed, through its `serveStdio`). */
  stdio(): Promise<void>;
  /**
   * Graceful shutdown: new calls refused, running ones get `graceMs` (default `shutdownGraceMs`),
   * then are aborted; jobs are stopped; stores closed. Idempotent.
   */
  shutdown(graceMs?: number): Promise<void>;
  /**
   * A fresh tethered `McpServer` of `line` with every tool (what each session or request gets).
   * For tests and hand wiring; the app must have started (`start()`, `listen()` or `stdio()`).
   */
  createServer(line: SdkLine): unknown;
  /** Load the SDKs, open the stores, build the stack (done by `listen()`/`stdio()`). Idempotent. */
  start(): Promise<void>;
  /** The stack, once started (`middlewares`, `cancellation`, `locks`, `engine`, `jobs`). */
  readonly stack: Stack | undefined;
  /** Where the shared stores live: `memory` or the Redis URL (password hidden), once started. */
  readonly stores: string | undefined;
}

/** `$PORT` (a TCP port, 0–65535), else 3000. @throws {TypeError} a `PORT` that is not a port number */
function portFromEnv(env: string | undefined): number {
  if (env === undefined || env === '') return 3_000;
  const n = Number(env);
  if (!(Number.isInteger(n) && n >= 0 && n <= 65_535))
    throw new TypeError(`@mcp-tether/server: PORT from the environment is not a port number (0 to 65535): ${env}`);
  return n;
}

/** Positive finite number from an option or an environment variable, else `fallback`. */
function ms(value: number | undefined, env: string | undefined, fallback: number, what: string): number {
  if (value !== undefined) {
    if (!(typeof value === 'number' && value >= 0 && Number.isFinite(value)))
      throw new TypeError(`@mcp-tether/server: ${what} must be a number of ms >= 0`);
    return value;
  }
  if (env !== undefined && env !== '') {
    const n = Number(env);
    if (!(Number.isFinite(n) && n >= 0))
      throw new TypeError(`@mcp-tether/server: ${what} from the environment is not a number of ms: ${env}`);
    return n;
  }
  return fallback;
}

/**
 * Create an app: `app.tool(...)` per tool, `app.use(...)` for your middleware, then
 * `await app.listen()` (Streamable HTTP, both eras) or `await app.stdio()`.
 * @throws TypeError for an invalid option
 */
export function createApp(options: AppOptions = {}): App {
  const a = appState(options);
  const shutdown = (grace = a.graceMs): Promise<void> => shutdownApp(a, grace);
  const start = (): Promise<void> => startApp(a);
  const createServer = (line: SdkLine): unknown => createServerOf(a, line);
  const app: App = {
    tool(name: string, config: unknown, handler?: unknown) {
      notStarted(a, 'tool()');
      if (typeof config === 'function') a.tools.add(name, {}, config as ToolHandler<ZodShape>);
      else a.tools.add(name, config as ToolConfig, handler as ToolHandler<ZodShape>);
      return app;
    },
    use(middleware) {
      notStarted(a, 'use()');
      a.user.push(middlewareOf(middleware));
      return app;
    },
    listen: (port, host = '127.0.0.1') => listenOn(a, port, host, shutdown),
    stdio: () => serveStdio(a, shutdown),
    shutdown,
    createServer,
    start,
    get stack() {
      return a.stack;
    },
    get stores() {
      return a.stores?.where;
    },
  };
  return app;
}

/** What the parts of one app share: its settings, its tools, and what it holds once started. */
interface AppState {
  readonly options: AppOptions;
  readonly info: { name: string; version: string };
  readonly settings: StackSettings;
  readonly graceMs: number;
  readonly log: (line: string) => void;
  readonly redisUrl: string | undefined;
  readonly tools: Tools;
  /**
   * The tools registered once, shared by the server of every session and request (issue 28): a
   * request's server costs the same with 1 or 100 tools.
   */
  readonly table: ToolTable;
  /** Middleware added with `use()`, in order. */
  readonly user: Middleware[];
  started: Promise<void> | undefined;
  sdks: Sdks | undefined;
  stores: Stores | undefined;
  stack: Stack | undefined;
  front: McpHttp | undefined;
  stdioHandle: { close(): Promise<void> } | undefined;
  closing: Promise<void> | undefined;
}

/** The options checked, with their defaults (and `TETHER_INLINE_MS`, `REDIS_URL`). @throws TypeError for an invalid option */
function appState(options: AppOptions): AppState {
  const settings: StackSettings = {
    timeoutMs: ms(options.timeoutMs, undefined, 600_000, 'timeoutMs'),
    heartbeatMs: ms(options.heartbeatMs, undefined, 10_000, 'heartbeatMs'),
    inlineMs: ms(options.inlineMs, process.env.TETHER_INLINE_MS, 20_000, 'inlineMs'),
    jobTtlMs: ms(options.jobTtlMs, undefined, 3_600_000, 'jobTtlMs'),
    maxQueue: ms(options.maxQueue, undefined, 100, 'maxQueue'),
    ...(options.mrtr && { mrtr: options.mrtr }),
  };
  const tools = new Tools();
  return {
    options,
    info: { name: options.name ?? 'mcp-server', version: options.version ?? '1.0.0' },
    settings,
    graceMs: ms(options.shutdownGraceMs, undefined, 10_000, 'shutdownGraceMs'),
    log: options.log === false ? () => {} : (options.log ?? ((line: string) => console.error(line))),
    redisUrl: options.redisUrl === false ? undefined : (options.redisUrl ?? process.env.REDIS_URL) || undefined,
    tools,
    table: toolTable((server) => tools.registerAll(server)),
    user: [],
    started: undefined,
    sdks: undefined,
    stores: undefined,
    stack: undefined,
    front: undefined,
    stdioHandle: undefined,
    closing: undefined,
  };
}

/** @throws Error once the app has started (tools and middleware are fixed then) */
function notStarted(a: AppState, what: string): void {
  if (a.started) throw new Error(`@mcp-tether/server: ${what} before the app starts (listen/stdio/start)`);
}

/** A `use()` argument as a middleware. @throws TypeError for anything else */
function middlewareOf(middleware: Middleware | Middleware['handle']): Middleware {
  if (typeof middleware === 'function') return { name: middleware.name || 'use', handle: middleware };
  if (middleware && typeof middleware === 'object' && typeof middleware.name === 'string') return middleware;
  throw new TypeError('@mcp-tether/server: use() takes a Middleware ({ name, handle, ... }) or a (ctx, next) function');
}

/** `App.createServer`: a fresh tethered `McpServer` of `line` with every tool (and the job tools). */
function createServerOf(a: AppState, line: SdkLine): unknown {
  const { stack, sdks, options } = a;
  if (!stack || !sdks) throw new Error('@mcp-tether/server: createServer() after start()');
  const sdk = sdks[line];
  if (!sdk)
    throw new Error(
      `@mcp-tether/server: ${line === 'v1' ? '@modelcontextprotocol/sdk (1.x)' : '@modelcontextprotocol/server (2.x)'} is not installed`,
    );
  const server = tether(
    new sdk.McpServer(a.info, options.instructions === undefined ? undefined : { instructions: options.instructions }),
    stack.middlewares,
  );
  a.table.install(server);
  if (a.tools.hasJobs) stack.jobs.registerTools(server);
  return server;
}

/** `App.start`: load the SDKs, open the stores, build the stack; once. */
function startApp(a: AppState): Promise<void> {
  a.started ??= (async () => {
    a.sdks = await loadSdks();
    a.stores = a.redisUrl ? await redisStores(a.redisUrl, a.options.redisPrefix) : memoryStores();
    a.stack = buildStack(a.tools, a.settings, a.stores, a.user, (uri) => a.front?.notify.resourceUpdated(uri));
  })();
  return a.started;
}

/** `App.shutdown`: the HTTP front's graceful end, then the jobs and calls left, stdio, the stores; once. */
function shutdownApp(a: AppState, grace: number): Promise<void> {
  a.closing ??= (async () => {
    const { front, stack } = a;
    if (front) {
      const r = await front.shutdown(grace);
      if (r.finished || r.aborted)
        a.log(`${a.info.name}: ${r.finished} call(s) finished, ${r.aborted} stopped at the end of the grace period`);
    }
    if (stack) {
      // Jobs that outlived their requests (and, on stdio, every call) stop now.
      await stack.cancellation.drain(front ? 1_000 : grace).catch(() => undefined);
      await stack.engine.close(1_000).catch(() => undefined);
    }
    await a.stdioHandle?.close().catch(() => undefined);
    await a.stores?.close().catch(() => undefined);
  })();
  return a.closing;
}

/** `App.listen`: start, then serve Streamable HTTP (both eras when SDK 2.x is installed). */
async function listenOn(
  a: AppState,
  port: number | undefined,
  host: string,
  shutdown: (grace?: number) => Promise<void>,
): Promise<Served> {
  if (a.front) throw new Error('@mcp-tether/server: listen() was already called');
  const { options, graceMs } = a;
  const chosen = port ?? portFromEnv(process.env.PORT);
  await startApp(a);
  const sdks = a.sdks!;
  const stores = a.stores!;
  const legacy: SdkLine = options.legacySdk === 'v2' || !sdks.v1 ? 'v2' : 'v1';
  const front = createMcpHttp({
    ...(stores.eventStore && { eventStore: stores.eventStore }),
    shutdownGraceMs: graceMs,
    ...options.http,
    legacy: () => createServerOf(a, legacy) as never,
    ...(sdks.v2 && { modern: () => createServerOf(a, 'v2') as never }),
  });
  a.front = front;
  let listening: Listening;
  try {
    listening = await front.listen(chosen, host);
  } catch (error) {
    await shutdown(0);
    if ((error as NodeJS.ErrnoException)?.code === 'EADDRINUSE')
      throw new Error(
        `@mcp-tether/server: port ${chosen} on ${host} is already in use (EADDRINUSE): stop what listens there, or set PORT / listen(port)`,
        { cause: error },
      );
    throw error;
  }
  const eras = sdks.v2
    ? `2025-era sessions: SDK ${legacy}; 2026-07-28 requests: SDK v2`
    : '2025-era sessions: SDK v1; no 2026-07-28 (install @modelcontextprotocol/server)';
  a.log(`${a.info.name} listening on ${listening.url.href} (${eras}; stores: ${stores.where})`);
  if (options.handleSignals !== false) installSignals(shutdown, a.log, a.info.name, graceMs);
  return { url: listening.url, port: listening.port, http: front };
}

/** `App.stdio`: start, then serve stdio (through SDK 2.x's `serveStdio` when it serves 2025-era sessions). */
async function serveStdio(a: AppState, shutdown: (grace?: number) => Promise<void>): Promise<void> {
  if (a.stdioHandle) throw new Error('@mcp-tether/server: stdio() was already called');
  const { options } = a;
  await startApp(a);
  const sdks = a.sdks!;
  if (sdks.v2 && (options.legacySdk === 'v2' || !sdks.v1)) {
    a.stdioHandle = sdks.v2.serveStdio(() => createServerOf(a, 'v2'));
  } else {
    const server = createServerOf(a, 'v1') as { connect(t: unknown): Promise<void>; close(): Promise<void> };
    await server.connect(new sdks.v1!.StdioServerTransport());
    a.stdioHandle = server;
  }
  if (options.handleSignals !== false) {
    installSignals(shutdown, a.log, a.info.name, a.graceMs);
    process.stdin.once('end', () => void shutdown().then(() => process.exit(0)));
  }
}
