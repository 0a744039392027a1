/**
 * @mcp-tether/testing/v2 — the test kit for `@modelcontextprotocol/server` 2.x servers, on both
 * protocol eras, with a real v2 `Client`:
 *
 * - `era: 'legacy'` (default): 2025-era session over the SDK's in-memory transport (`initialize`,
 *   `notifications/cancelled`, server→client requests on a live channel);
 * - `era: 'modern'`: protocol 2026-07-28 through `createMcpHandler(factory)` in process, the client
 *   pinned to `2026-07-28` (`versionNegotiation: { mode: { pin } }`) talking Streamable HTTP through
 *   `handler.fetch`. Every request gets a fresh server from the factory; cancelling a call closes its
 *   response stream (the 2026-07-28 cancel).
 *
 * Every JSON-RPC message both ways is recorded with a timestamp in a {@link WireLog}, with the HTTP
 * stream that carried it on the modern era.
 */
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type {
  AuthInfo,
  CallToolResult,
  ClientCapabilities,
  ElicitRequestParams,
  ElicitResult,
  JSONRPCMessage,
} from '@modelcontextprotocol/client';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { McpServer } from '@modelcontextprotocol/server';
import { recordingFetch } from './fetch.js';
import type { BaseCallOptions, RawCallOptions } from './raw.js';
import { callParams, cancelledNotification, requestOptions, responseOf, tapTransport } from './raw.js';
import { WireLog } from './wire.js';

export { WireLog, type WireMessage, type WireProgress, type Direction, type StreamTag } from './wire.js';

/** The protocol revision the modern-era client is pinned to. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';
/** Where the in-process modern endpoint pretends to live (never contacted: requests go to `handler.fetch`). */
export const MODERN_URL = 'http://tether.test/mcp';

/** What `createMcpHandler` hands a factory. */
export interface FactoryContext {
  era: 'legacy' | 'modern';
  authInfo?: AuthInfo;
  requestInfo?: Request;
}
/** Builds a fresh, tethered server: called once for the legacy era, once per HTTP request on the modern era. */
export type V2ServerFactory = (ctx: FactoryContext) => McpServer | Promise<McpServer>;

/** How the test client answers elicitations: a list used in order (the last repeats), or a function. */
export type V2ElicitationScript =
  | ElicitResult[]
  | ((
      params: ElicitRequestParams,
      info: { index: number; signal: AbortSignal },
    ) => ElicitResult | Promise<ElicitResult>);

/** One elicitation the client received (legacy: a server→client request; modern: an `inputRequests` entry it fulfilled). */
export interface V2ReceivedElicitation {
  params: ElicitRequestParams;
  /** The JSON-RPC id the server used (legacy), or the id the client gave the embedded request (modern). */
  requestId: string | number;
  /** Aborted when the server withdrew it. */
  signal: AbortSignal;
  answer?: ElicitResult;
}

/** Options of {@link connectV2}. */
export interface ConnectV2Options {
  /** `legacy` (default): 2025-era session in memory. `modern`: 2026-07-28 through `createMcpHandler`. */
  era?: 'legacy' | 'modern';
  /** Client capabilities; form elicitation is added when `elicit` is given and this is not. */
  capabilities?: ClientCapabilities;
  /** Answer elicitations with this script. */
  elicit?: V2ElicitationScript;
  /** Legacy in-memory only: emulate a sessionful transport with this session id. */
  sessionId?: string;
  /** Client name/version. */
  clientInfo?: { name: string; version: string };
  /** Modern only: the verified token every request carries (`ctx.principal` is its `clientId`). */
  authInfo?: AuthInfo;
  /** The v2 client's multi-round-trip options (`autoFulfill` default true, `maxRounds` default 10). */
  inputRequired?: { autoFulfill?: boolean; maxRounds?: number };
  /** `createMcpHandler` `responseMode` (modern only). */
  responseMode?: 'auto' | 'sse' | 'json';
}

/** Options of one call. */
export interface V2CallOptions extends BaseCallOptions {
  /** SDK `resetTimeoutOnProgress`. */
  resetTimeoutOnProgress?: boolean;
  /** Abort the call from the client: `notifications/cancelled` (legacy) or closing the response stream (modern). */
  signal?: AbortSignal;
}

/** A call started with {@link V2TestClient.start}: raw JSON-RPC with an id you choose. */
export interface V2StartedCall {
  readonly id: string | number;
  /** Resolves with the response message (result or error), or rejects after `timeoutMs` without one. */
  response(timeoutMs?: number): Promise<Record<string, any>>;
  /** Cancel it the era's way: `notifications/cancelled` (legacy) or closing its response stream (modern; `reason` is not sent). */
  cancel(reason?: string): Promise<void>;
  /** Modern: resolves when the call's HTTP exchange ended (response stream closed, with or without a response). Legacy: when the response arrived. */
  readonly ended: Promise<void>;
}

/** A connected v2 test client. */
export interface V2TestClient {
  readonly sdk: 'v2';
  readonly era: 'legacy' | 'modern';
  /** The real SDK client. */
  readonly client: Client;
  /** Every message, both directions. */
  readonly wire: WireLog;
  /** Elicitations received so far. */
  readonly elicitations: V2ReceivedElicitation[];
  /** Errors the SDK client reported. */
  readonly clientErrors: Error[];
  /** Modern: every server the factory built (one per HTTP request). Legacy: the one server. */
  readonly servers: unknown[];
  /** Modern: the `createMcpHandler` result. */
  readonly handler: ReturnType<typeof createMcpHandler> | undefined;
  /** Call a tool through the SDK client (modern: input_required rounds are fulfilled by the client). */
  callTool(name: string, args?: Record<string, unknown>, options?: V2CallOptions): Promise<CallToolResult>;
  /** Send a raw `tools/call` with the id you choose (default: a fresh string id). */
  start(name: string, args?: Record<string, unknown>, options?: RawCallOptions): V2StartedCall;
  /** Legacy: send `notifications/cancelled` for any id. Modern: close the response stream of a call started with `start()`, if in flight. */
  cancel(requestId: string | number, reason?: string): Promise<void>;
  /** Write any JSON-RPC message to the server (modern: one POST). */
  sendRaw(message: JSONRPCMessage | Record<string, unknown>): Promise<void>;
  /** Liveness: `ping` (legacy) or `server/discover` (modern: 2026-07-28 has no ping). */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

let rawIds = 0;

/**
 * Connect a v2 server to a real v2 `Client`.
 * @param serverOrFactory a server (legacy only) or a factory (required on the modern era, where
 *   every request is served by a fresh instance)
 * @throws TypeError when the modern era is asked for with a server instead of a factory
 */
export async function connectV2(
  serverOrFactory: McpServer | V2ServerFactory,
  options: ConnectV2Options = {},
): Promise<V2TestClient> {
  const era = options.era ?? 'legacy';
  const side = testClient(era, options);
  if (era === 'legacy') return connectLegacy(serverOrFactory, side, options);
  if (typeof serverOrFactory !== 'function') {
    throw new TypeError(
      'connectV2: the 2026-07-28 era serves every request on a fresh server; pass a factory, not a server',
    );
  }
  return connectModern(serverOrFactory, side, options);
}

/** The client side both eras share: the SDK client, its recordings, and the servers it talked to. */
interface ClientSide {
  readonly client: Client;
  readonly capabilities: ClientCapabilities;
  readonly wire: WireLog;
  readonly elicitations: V2ReceivedElicitation[];
  readonly clientErrors: Error[];
  readonly servers: unknown[];
}

/** A v2 `Client` for `era` (pinned to 2026-07-28 on the modern one), answering elicitations with the script. */
function testClient(era: 'legacy' | 'modern', options: ConnectV2Options): ClientSide {
  const capabilities: ClientCapabilities =
    options.capabilities ?? (options.elicit ? { elicitation: { form: {} } } : {});
  const clientOptions: Record<string, unknown> = { capabilities };
  if (options.inputRequired) clientOptions.inputRequired = options.inputRequired;
  if (era === 'modern') clientOptions.versionNegotiation = { mode: { pin: MODERN_PROTOCOL_VERSION } };
  const client = new Client(
    options.clientInfo ?? { name: 'tether-test-client', version: '0.0.0' },
    clientOptions as never,
  );
  const clientErrors: Error[] = [];
  client.onerror = (e) => clientErrors.push(e);
  const elicitations: V2ReceivedElicitation[] = [];
  if (capabilities.elicitation) answerElicitations(client, options.elicit, elicitations);
  return { client, capabilities, wire: new WireLog(), elicitations, clientErrors, servers: [] };
}

/** The client's `elicitation/create` handler: each one recorded, answered by `script` (cancel without one). */
function answerElicitations(
  client: Client,
  script: V2ElicitationScript | undefined,
  elicitations: V2ReceivedElicitation[],
): void {
  client.setRequestHandler('elicitation/create', async (request, ctx) => {
    const index = elicitations.length;
    const rec: V2ReceivedElicitation = {
      params: request.params,
      requestId: ctx.mcpReq.id,
      signal: ctx.mcpReq.signal,
    };
    elicitations.push(rec);
    let answer: ElicitResult;
    if (!script) answer = { action: 'cancel' };
    else if (typeof script === 'function') answer = await script(request.params, { index, signal: ctx.mcpReq.signal });
    else answer = script[Math.min(index, script.length - 1)] ?? { action: 'cancel' };
    rec.answer = answer;
    return answer;
  });
}

/** The legacy era: a 2025-era session over the SDK's in-memory transport, every message recorded. */
async function connectLegacy(
  serverOrFactory: McpServer | V2ServerFactory,
  side: ClientSide,
  options: ConnectV2Options,
): Promise<V2TestClient> {
  const { client, wire } = side;
  const server = typeof serverOrFactory === 'function' ? await serverOrFactory({ era: 'legacy' }) : serverOrFactory;
  side.servers.push(server);
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  if (options.sessionId !== undefined) (serverTransport as { sessionId?: string }).sessionId = options.sessionId;
  tapTransport(clientTransport, wire);
  await server.connect(serverTransport);
  await client.connect(clientTransport);
  const sendRaw = (message: JSONRPCMessage | Record<string, unknown>) =>
    clientTransport.send(message as JSONRPCMessage);
  const kit: V2TestClient = {
    sdk: 'v2',
    era: 'legacy',
    client,
    wire,
    elicitations: side.elicitations,
    clientErrors: side.clientErrors,
    servers: side.servers,
    handler: undefined,
    callTool: (name, args, o) => callTool(client, name, args, o),
    start: (name, args = {}, o = {}) => {
      const id = o.id ?? `raw-${++rawIds}`;
      void sendRaw({ jsonrpc: '2.0', id, method: 'tools/call', params: callParams(name, args, o) });
      let ended: Promise<void> | undefined;
      return {
        id,
        response: (timeoutMs) => responseOf(wire, id, timeoutMs),
        cancel: (reason) => kit.cancel(id, reason),
        get ended() {
          ended ??= wire
            .waitFor(
              (m) => m.message.id === id && m.direction === 'server->client' && m.message.method === undefined,
              2 ** 31 - 1,
            )
            .then(() => {});
          return ended;
        },
      };
    },
    cancel: (requestId, reason) => sendRaw(cancelledNotification(requestId, reason)),
    sendRaw,
    ping: async (timeoutMs = 5_000) => {
      await client.ping({ timeout: timeoutMs });
    },
    close: async () => {
      await client.close();
      await server.close();
    },
  };
  return kit;
}

/** The modern era: `createMcpHandler(factory)` in process, reached through `handler.fetch`, every message recorded. */
async function connectModern(
  factory: V2ServerFactory,
  side: ClientSide,
  options: ConnectV2Options,
): Promise<V2TestClient> {
  const { client, wire, servers } = side;
  const handlerOptions: Record<string, unknown> = { onerror: () => {} };
  if (options.responseMode) handlerOptions.responseMode = options.responseMode;
  const handler = createMcpHandler(async (ctx) => {
    const s = await factory(ctx as FactoryContext);
    servers.push(s);
    return s;
  }, handlerOptions as never);
  const fetchOptions = options.authInfo ? { authInfo: options.authInfo } : undefined;
  const base: typeof fetch = (input, init) =>
    handler.fetch(new Request(input as string | URL, init), fetchOptions as never);
  const recFetch = recordingFetch(wire, base, { recordRequests: true });
  const transport = new StreamableHTTPClientTransport(new URL(MODERN_URL), { fetch: recFetch });
  await client.connect(transport);
  const inflight = new Map<string | number, AbortController>();
  const clientInfo = options.clientInfo ?? { name: 'tether-test-client', version: '0.0.0' };
  const post = modernPoster(recFetch, side.capabilities, clientInfo);

  const kit: V2TestClient = {
    sdk: 'v2',
    era: 'modern',
    client,
    wire,
    elicitations: side.elicitations,
    clientErrors: side.clientErrors,
    servers,
    handler,
    callTool: (name, args, o) => callTool(client, name, args, o),
    start: (name, args = {}, o = {}) => {
      const id = o.id ?? `raw-${++rawIds}`;
      const controller = new AbortController();
      inflight.set(id, controller);
      let markEnded!: () => void;
      const ended = new Promise<void>((resolve) => (markEnded = resolve));
      const onEnd = () => {
        if (inflight.get(id) === controller) inflight.delete(id);
        markEnded();
      };
      void post(
        { jsonrpc: '2.0', id, method: 'tools/call', params: callParams(name, args, o) },
        controller.signal,
        onEnd,
      ).catch(() => {});
      return {
        id,
        response: (timeoutMs) => responseOf(wire, id, timeoutMs),
        cancel: (reason) => kit.cancel(id, reason),
        ended,
      };
    },
    cancel: async (requestId) => {
      const controller = inflight.get(requestId);
      inflight.delete(requestId);
      controller?.abort();
    },
    sendRaw: (message) => post(message as Record<string, unknown>),
    ping: async (timeoutMs = 5_000) => {
      await client.request({ method: 'server/discover' } as never, { timeout: timeoutMs });
    },
    close: async () => {
      for (const c of inflight.values()) c.abort();
      inflight.clear();
      await client.close().catch(() => {});
      await handler.close();
    },
  };
  return kit;
}

type Poster = (message: Record<string, unknown>, signal?: AbortSignal, onEnd?: () => void) => Promise<void>;

/**
 * POST one message the way a 2026-07-28 client does (envelope in `_meta`, standard headers), and
 * drain the response so the recording sees all of it; `onEnd` runs when the exchange ended.
 */
function modernPoster(
  recFetch: typeof fetch,
  capabilities: ClientCapabilities,
  clientInfo: { name: string; version: string },
): Poster {
  return async (message, signal, onEnd) => {
    const init: RequestInit = { method: 'POST', ...modernRequest(message, capabilities, clientInfo) };
    if (signal) init.signal = signal;
    let res: Response;
    try {
      res = await recFetch(MODERN_URL, init);
    } catch (err) {
      onEnd?.();
      throw err;
    }
    // Drain our branch so the recording branch sees everything; stop when the call is cancelled.
    if (!res.body) return onEnd?.();
    const reader = res.body.getReader();
    signal?.addEventListener('abort', () => void reader.cancel().catch(() => {}), { once: true });
    void (async () => {
      try {
        for (;;) if ((await reader.read()).done) break;
      } catch {
        /* cancelled */
      } finally {
        onEnd?.();
      }
    })();
  };
}

/** The headers and body of one 2026-07-28 POST: `Mcp-Method`, `Mcp-Name` (SEP-2243, SEP-2663) and the `_meta` envelope. */
function modernRequest(
  message: Record<string, unknown>,
  capabilities: ClientCapabilities,
  clientInfo: { name: string; version: string },
): { headers: Record<string, string>; body: string } {
  const method = typeof message.method === 'string' ? message.method : undefined;
  let body = message;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN_PROTOCOL_VERSION,
  };
  if (method) {
    headers['mcp-method'] = method;
    const p = (message.params ?? {}) as Record<string, unknown>;
    // SEP-2243 `Mcp-Name`: params.name / params.uri; SEP-2663: params.taskId for tasks/get|update|cancel.
    const nameHeader =
      method.startsWith('tasks/') && typeof p.taskId === 'string'
        ? p.taskId
        : typeof p.name === 'string'
          ? p.name
          : typeof p.uri === 'string'
            ? p.uri
            : undefined;
    if (nameHeader !== undefined && /^[\x20-\x7e]*$/.test(nameHeader) && nameHeader.trim() === nameHeader)
      headers['mcp-name'] = nameHeader;
    const meta = (p._meta ?? {}) as Record<string, unknown>;
    body = {
      ...message,
      params: {
        ...p,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
          'io.modelcontextprotocol/clientCapabilities': capabilities,
          'io.modelcontextprotocol/clientInfo': clientInfo,
          ...meta,
        },
      },
    };
  }
  return { headers, body: JSON.stringify(body) };
}

function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  o: V2CallOptions = {},
): Promise<CallToolResult> {
  const params = callParams(name, args, o.onprogress ? { meta: o.meta } : o);
  const ro = requestOptions(o);
  // client.request, not client.callTool: no tools/list fetch for output validation, so the wire holds only the call.
  return client.request({ method: 'tools/call', params } as never, ro as never) as Promise<CallToolResult>;
}
