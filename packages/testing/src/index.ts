/**
 * @mcp-tether/testing — connect a server to a real SDK `Client` and watch the wire.
 *
 * No mocks: the server is the SDK's `McpServer`, the client is the SDK's `Client`, and they talk
 * over the SDK's own transports (in-memory, stdio, or Streamable HTTP on 127.0.0.1). Every
 * JSON-RPC message in both directions is recorded with a timestamp in a {@link WireLog}.
 *
 * Works with vitest fake timers (`vi.useFakeTimers()`): timestamps use `Date.now()`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  type CallToolResult,
  type ClientCapabilities,
  type ElicitRequest,
  type ElicitResult,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { recordingFetch } from './fetch.js';
export { readSse } from './fetch.js';
import type { BaseCallOptions, RawCallOptions } from './raw.js';
import { callParams, cancelledNotification, requestOptions, responseOf, tapTransport } from './raw.js';
import { WireLog } from './wire.js';

export { WireLog, type WireMessage, type WireProgress, type Direction, type StreamTag } from './wire.js';
export { serveHttp, type HttpHarness, type ServeHttpOptions } from './http.js';
export { pause, sleep, until, percentile, firstText } from './helpers.js';
export { spawnStdio, type RawStdio, type SpawnStdioOptions } from './stdio.js';

/** Anything with `connect(transport)`: an SDK `McpServer` (v1). */
export interface ConnectableServer {
  connect(transport: Transport): Promise<void>;
  close(): Promise<void>;
}

/** Parameters of one `elicitation/create` the client received. */
export type ElicitParams = ElicitRequest['params'];

/** How the test client answers elicitations: a list used in order (the last repeats), or a function. */
export type ElicitationScript =
  | ElicitResult[]
  | ((params: ElicitParams, info: { index: number; signal: AbortSignal }) => ElicitResult | Promise<ElicitResult>);

/** One elicitation the client received. */
export interface ReceivedElicitation {
  params: ElicitParams;
  /** The JSON-RPC id the server used. */
  requestId: string | number;
  /** Aborted when the server withdrew it (`notifications/cancelled`). */
  signal: AbortSignal;
  answer?: ElicitResult;
}

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** Client capabilities, e.g. `{ elicitation: { form: {} } }`. Set automatically to form mode when `elicit` is given and this is not. */
  capabilities?: ClientCapabilities;
  /** Answer elicitations with this script. */
  elicit?: ElicitationScript;
  /** Emulate a sessionful transport: the server transport gets this session id. */
  sessionId?: string;
  /** Client name/version. */
  clientInfo?: { name: string; version: string };
}

/** Options of one call. */
export interface CallOptions extends BaseCallOptions {
  /** SDK `resetTimeoutOnProgress`. Only meaningful with `onprogress` (the SDK then picks the token). */
  resetTimeoutOnProgress?: boolean;
  /** Abort the call from the client (the SDK sends `notifications/cancelled`). */
  signal?: AbortSignal;
}

/** A call started with {@link TestClient.start}: raw JSON-RPC with an id you choose. */
export interface StartedCall {
  readonly id: string | number;
  /** Resolves with the response message (result or error), or rejects after `timeoutMs` without one. */
  response(timeoutMs?: number): Promise<Record<string, any>>;
  /** Send `notifications/cancelled` for this id. */
  cancel(reason?: string): Promise<void>;
}

/** A connected test client. */
export interface TestClient {
  /** The real SDK client. */
  readonly client: Client;
  /** Every message, both directions. */
  readonly wire: WireLog;
  /** Elicitations received so far. */
  readonly elicitations: ReceivedElicitation[];
  /** Errors the SDK client reported (e.g. a response for an id it did not send, which raw calls cause). */
  readonly clientErrors: Error[];
  /** Call a tool through the SDK client. */
  callTool(name: string, args?: Record<string, unknown>, options?: CallOptions): Promise<CallToolResult>;
  /** Send a raw `tools/call` with the id you choose (default: a fresh string id). */
  start(name: string, args?: Record<string, unknown>, options?: RawCallOptions): StartedCall;
  /** Send `notifications/cancelled` for any id (unknown, 0, twice: all allowed). */
  cancel(requestId: string | number, reason?: string): Promise<void>;
  /** Write any JSON-RPC message to the server. */
  sendRaw(message: JSONRPCMessage | Record<string, unknown>): Promise<void>;
  /** Send a `ping` and resolve when answered. */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

let rawIds = 0;

/** Connect `server` to a real SDK client over the SDK's in-memory transport. */
export async function connect(server: ConnectableServer, options: ConnectOptions = {}): Promise<TestClient> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  if (options.sessionId !== undefined) (serverTransport as { sessionId?: string }).sessionId = options.sessionId;
  const wire = new WireLog();
  tapTransport(clientTransport, wire);
  await server.connect(serverTransport);
  const kit = await connectClient(clientTransport, wire, options, clientTransport);
  const close = kit.close;
  return {
    ...kit,
    close: async () => {
      await close();
      await server.close();
    },
  };
}

/** Spawn a server process speaking stdio and connect a real SDK client to it. */
export async function connectStdio(
  command: string,
  args: string[],
  options: ConnectOptions & { env?: Record<string, string>; cwd?: string } = {},
): Promise<TestClient> {
  const transportOptions: ConstructorParameters<typeof StdioClientTransport>[0] = { command, args, stderr: 'inherit' };
  if (options.env) transportOptions.env = options.env;
  if (options.cwd) transportOptions.cwd = options.cwd;
  const transport = new StdioClientTransport(transportOptions);
  const wire = new WireLog();
  tapTransport(transport, wire);
  return connectClient(transport, wire, options, transport);
}

/**
 * Connect a real SDK client to a Streamable HTTP endpoint (e.g. from {@link serveHttp}). Each
 * server→client message is tagged with the HTTP stream that carried it (`post` with the request ids
 * of its POST body, `get`, or `json`).
 */
export async function connectHttp(
  url: string | URL,
  options: ConnectOptions = {},
): Promise<TestClient & { transport: StreamableHTTPClientTransport }> {
  const wire = new WireLog();
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(wire, fetch) });
  const origSend = transport.send.bind(transport);
  transport.send = (message, opts) => {
    wire.record('client->server', message);
    return origSend(message, opts);
  };
  const kit = await connectClient(transport, wire, options, transport);
  return { ...kit, transport };
}

async function connectClient(
  transport: Transport,
  wire: WireLog,
  options: ConnectOptions,
  raw: Transport,
): Promise<TestClient> {
  const capabilities: ClientCapabilities =
    options.capabilities ?? (options.elicit ? { elicitation: { form: {} } } : {});
  const client = new Client(options.clientInfo ?? { name: 'tether-test-client', version: '0.0.0' }, { capabilities });
  const clientErrors: Error[] = [];
  client.onerror = (e) => clientErrors.push(e);
  const elicitations: ReceivedElicitation[] = [];
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      const index = elicitations.length;
      const rec: ReceivedElicitation = { params: request.params, requestId: extra.requestId, signal: extra.signal };
      elicitations.push(rec);
      const script = options.elicit;
      let answer: ElicitResult;
      if (!script) answer = { action: 'cancel' };
      else if (typeof script === 'function') answer = await script(request.params, { index, signal: extra.signal });
      else answer = script[Math.min(index, script.length - 1)] ?? { action: 'cancel' };
      rec.answer = answer;
      return answer;
    });
  }
  await client.connect(transport);

  const sendRaw = (message: JSONRPCMessage | Record<string, unknown>) => raw.send(message as JSONRPCMessage);
  const kit: TestClient = {
    client,
    wire,
    elicitations,
    clientErrors,
    callTool: (name, args = {}, o = {}) => {
      const params = callParams(name, args, o.onprogress ? { meta: o.meta } : o);
      return client.request(
        { method: 'tools/call', params } as never,
        CallToolResultSchema,
        requestOptions(o),
      ) as Promise<CallToolResult>;
    },
    start: (name, args = {}, o = {}) => {
      const id = o.id ?? `raw-${++rawIds}`;
      void sendRaw({ jsonrpc: '2.0', id, method: 'tools/call', params: callParams(name, args, o) });
      return {
        id,
        response: (timeoutMs) => responseOf(wire, id, timeoutMs),
        cancel: (reason) => kit.cancel(id, reason),
      };
    },
    cancel: (requestId, reason) => sendRaw(cancelledNotification(requestId, reason)),
    sendRaw,
    ping: async (timeoutMs = 5_000) => {
      await client.ping({ timeout: timeoutMs });
    },
    close: () => client.close(),
  };
  return kit;
}
