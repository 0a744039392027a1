/**
 * `connect(url)`: an SDK client of the installed line over Streamable HTTP, wrapped. With SDK 2.x
 * (`@modelcontextprotocol/client`) it negotiates the era (`versionNegotiation: 'auto'`: 2026-07-28
 * where the server supports it, else a 2025-era session) and declares the 2026 tasks extension;
 * with SDK 1.x (`@modelcontextprotocol/sdk`) it opens a 2025-era session.
 */
import { TASKS_EXTENSION } from '@mcp-tether/core';
import { tetherClient, type TetherClient } from './client.js';
import type { SdkClient, TetherClientOptions } from './types.js';

/** An `elicitation/create` request's params, as `onElicit` gets them. */
export interface ElicitRequest {
  /** `form` (default) or `url`. */
  mode?: 'form' | 'url';
  message: string;
  /** Form mode: the flat JSON Schema of the answer. */
  requestedSchema?: Record<string, unknown>;
  /** URL mode: where to send the user. */
  url?: string;
  [key: string]: unknown;
}

/** The user's answer to an {@link ElicitRequest}. */
export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  /** Form mode, `accept`: the values, by field. */
  content?: Record<string, string | number | boolean | string[]>;
}

/** Options of {@link connect}: the wrapper's options, and how to connect. */
export interface ConnectOptions extends TetherClientOptions {
  /** The client's name and version. Default `{ name: 'mcp-tether-client', version: '0' }`. */
  clientInfo?: { name: string; version: string };
  /** Which installed SDK line to use. Default: 2.x when `@modelcontextprotocol/client` is installed, else 1.x. */
  sdk?: 'v1' | 'v2';
  /**
   * SDK 2.x: `auto` (default: 2026-07-28 where the server supports it, else a 2025-era session),
   * `legacy` (a 2025-era session), `modern` (2026-07-28 only). SDK 1.x speaks 2025-era only.
   */
  era?: 'auto' | 'legacy' | 'modern';
  /** Headers sent with every HTTP request (e.g. `Authorization`). */
  headers?: Record<string, string>;
  /** The `fetch` to use. Default: the global one. */
  fetch?: typeof fetch;
  /** More client capabilities (merged with those `connect` declares). */
  capabilities?: Record<string, unknown>;
  /**
   * Answers the server's questions (`elicitation/create` in a 2025-era session, `input_required`
   * rounds on 2026-07-28, and the questions of jobs and tasks `follow` meets). Declares the
   * `elicitation` capability (form and URL modes). Without it the client declares none, and a server
   * that needs to ask refuses cleanly.
   */
  onElicit?: (request: ElicitRequest, info: { signal: AbortSignal }) => Promise<ElicitAnswer>;
}

const MODERN = '2026-07-28';

interface SdkLine {
  Client: new (info: object, options: object) => SdkClient & { connect(transport: unknown): Promise<void> };
  Transport: new (url: URL, options: object) => unknown;
  /** v1 registers request handlers by schema, v2 by method name. */
  elicitKey: unknown;
}

async function loadV2(): Promise<SdkLine> {
  const m = await import('@modelcontextprotocol/client');
  return {
    Client: m.Client as never,
    Transport: m.StreamableHTTPClientTransport as never,
    elicitKey: 'elicitation/create',
  };
}

async function loadV1(): Promise<SdkLine> {
  const [c, t, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Client: c.Client as never,
    Transport: t.StreamableHTTPClientTransport as never,
    elicitKey: types.ElicitRequestSchema,
  };
}

async function loadSdk(which: 'v1' | 'v2' | undefined): Promise<{ line: 'v1' | 'v2'; sdk: SdkLine }> {
  const missing = (e: unknown) =>
    (e as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND' || (e as { code?: string })?.code === 'MODULE_NOT_FOUND';
  if (which !== 'v1') {
    try {
      return { line: 'v2', sdk: await loadV2() };
    } catch (e) {
      if (which === 'v2' || !missing(e)) throw e;
    }
  }
  try {
    return { line: 'v1', sdk: await loadV1() };
  } catch (e) {
    if (!missing(e)) throw e;
    throw new Error(
      'connect: no MCP SDK client found: install @modelcontextprotocol/client (2.x) or @modelcontextprotocol/sdk (1.x)',
      { cause: e },
    );
  }
}

/**
 * Connect to a Streamable HTTP MCP endpoint and wrap the client (see `tetherClient`); `close()`
 * ends it (and its 2025-era session).
 * @param url the endpoint, e.g. `http://127.0.0.1:3000/mcp`
 * @throws {Error} no SDK client installed; the SDK's error when the server cannot be reached or refuses
 * @throws {TypeError} `era: 'modern'` with SDK 1.x, or a URL that is not http(s)
 */
export async function connect(url: string | URL, options: ConnectOptions = {}): Promise<TetherClient> {
  const endpoint = new URL(url);
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:')
    throw new TypeError(`connect: expected an http(s) URL, got ${endpoint.protocol}`);
  const { line, sdk } = await loadSdk(options.sdk);
  const era = options.era ?? 'auto';
  if (line === 'v1' && era === 'modern')
    throw new TypeError('connect: era "modern" (2026-07-28) needs SDK 2.x (@modelcontextprotocol/client)');
  const capabilities: Record<string, unknown> = { ...options.capabilities };
  if (options.onElicit) capabilities.elicitation ??= { form: {}, url: {} };
  if (line === 'v2') {
    const extensions = (capabilities.extensions ?? {}) as Record<string, unknown>;
    capabilities.extensions = { [TASKS_EXTENSION]: {}, ...extensions };
  }
  const clientOptions: Record<string, unknown> = { capabilities };
  if (line === 'v2' && era !== 'legacy')
    clientOptions.versionNegotiation = { mode: era === 'modern' ? { pin: MODERN } : 'auto' };
  const client = new sdk.Client(options.clientInfo ?? { name: 'mcp-tether-client', version: '0' }, clientOptions);
  if (options.onElicit) {
    const onElicit = options.onElicit;
    const signalOf = (extra: any): AbortSignal =>
      extra?.signal ?? extra?.mcpReq?.signal ?? new AbortController().signal;
    (
      client as unknown as { setRequestHandler(key: unknown, h: (request: any, extra: any) => Promise<unknown>): void }
    ).setRequestHandler(
      sdk.elicitKey,
      async (request, extra) =>
        onElicit(request.params as ElicitRequest, { signal: signalOf(extra) }) as Promise<unknown>,
    );
  }
  const transport = new sdk.Transport(endpoint, {
    ...(options.headers && { requestInit: { headers: options.headers } }),
    ...(options.fetch && { fetch: options.fetch }),
  });
  const tc = tetherClient(client, options);
  await client.connect(transport);
  const closeClient = tc.close;
  tc.close = async () => {
    await endSession(transport as { terminateSession?: () => Promise<void> });
    await closeClient.call(tc);
  };
  return tc;
}

/** How long `close()` waits for the server to answer the session's DELETE, in ms. */
const END_SESSION_MS = 5_000;

/**
 * End the client's 2025-era session on the server (an HTTP DELETE with its `Mcp-Session-Id`, spec
 * `basic/transports` §session management) before the transport closes: the SDK's `Client.close()`
 * does not, so each connect/close left a session that counted against the client's
 * `maxSessionsPerClient` until its idle expiry (100 connects in 5 minutes locked the address out).
 * Nothing to do without a session (2026-07-28); a server that refuses (405), is gone or does not
 * answer within {@link END_SESSION_MS} does not stop the close.
 */
async function endSession(transport: { terminateSession?: () => Promise<void> }): Promise<void> {
  if (typeof transport.terminateSession !== 'function') return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, END_SESSION_MS);
    timer.unref?.();
  });
  try {
    await Promise.race([transport.terminateSession().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
