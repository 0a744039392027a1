/**
 * An in-process MCP connection to a server built by the user's factory: how a worker runs a job's
 * call through the user's whole middleware chain without a network. The server sees an ordinary
 * 2025-11-25 session (the SDK's `Transport` interface, which both SDK lines accept); this side
 * speaks raw JSON-RPC so that it can attach the job owner's principal as `authInfo` (a real client
 * cannot).
 */

/** The part of an `McpServer` (either SDK line) the worker uses. */
export interface ConnectableServer {
  connect(transport: any): Promise<void>;
  close(): Promise<void>;
}

type Message = { jsonrpc: '2.0'; id?: string | number; method?: string; params?: any; result?: any; error?: any };

/** What the worker gets back for one call: the JSON-RPC result, or the error object. */
export type LocalAnswer =
  | { result: Record<string, unknown> }
  | { error: { code: number; message: string; data?: unknown } };

const PROTOCOL_VERSION = '2025-11-25';

/** One in-process session with one server. */
export class LocalSession {
  readonly #server: ConnectableServer;
  readonly #pending = new Map<number, (answer: LocalAnswer) => void>();
  #nextId = 1;
  #transport!: {
    onmessage?: (message: Message, extra?: { authInfo?: unknown }) => void;
    onclose?: () => void;
    onerror?: (error: Error) => void;
  };
  #closed = false;

  private constructor(server: ConnectableServer) {
    this.#server = server;
  }

  /** Connect to `server` and run the `initialize` handshake. */
  static async open(server: ConnectableServer, name = 'tether-worker'): Promise<LocalSession> {
    const session = new LocalSession(server);
    await session.#connect(name);
    return session;
  }

  async #connect(name: string): Promise<void> {
    const self = this;
    const transport = {
      sessionId: undefined as string | undefined,
      onmessage: undefined as ((message: Message, extra?: { authInfo?: unknown }) => void) | undefined,
      onclose: undefined as (() => void) | undefined,
      onerror: undefined as ((error: Error) => void) | undefined,
      async start() {},
      async send(message: Message) {
        // Server → this side. Answers settle calls; requests are refused (a job has no client to ask:
        // its questions go through input_required); notifications are dropped.
        queueMicrotask(() => self.#receive(message));
      },
      async close() {
        self.#shut();
      },
    };
    this.#transport = transport;
    await this.#server.connect(transport);
    const init = await this.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name, version: '0' },
    });
    if ('error' in init) throw new Error(`worker: initialize failed: ${init.error.message}`);
    this.#notify('notifications/initialized');
  }

  /** Send a request; resolves with its answer (never rejects while the session is open). */
  request(method: string, params: Record<string, unknown>, principal?: string): Promise<LocalAnswer> {
    if (this.#closed) return Promise.resolve({ error: { code: -32000, message: 'worker session closed' } });
    const id = this.#nextId++;
    return new Promise<LocalAnswer>((resolve) => {
      this.#pending.set(id, resolve);
      const authInfo = principal === undefined ? undefined : { token: '', clientId: principal, scopes: [] };
      const message: Message = { jsonrpc: '2.0', id, method, params };
      queueMicrotask(() => this.#transport.onmessage?.(message, authInfo === undefined ? undefined : { authInfo }));
    });
  }

  #notify(method: string, params?: Record<string, unknown>): void {
    const message: Message = { jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) };
    queueMicrotask(() => this.#transport.onmessage?.(message));
  }

  #receive(message: Message): void {
    if (message.method !== undefined) {
      if (message.id !== undefined) {
        const answer: Message = {
          jsonrpc: '2.0',
          id: message.id,
          error: { code: -32601, message: `a job worker has no client to answer ${message.method}` },
        };
        queueMicrotask(() => this.#transport.onmessage?.(answer));
      }
      return;
    }
    if (typeof message.id !== 'number') return;
    const settle = this.#pending.get(message.id);
    if (settle === undefined) return;
    this.#pending.delete(message.id);
    settle(message.error !== undefined ? { error: message.error } : { result: message.result ?? {} });
  }

  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const settle of this.#pending.values()) settle({ error: { code: -32000, message: 'worker session closed' } });
    this.#pending.clear();
    this.#transport.onclose?.();
  }

  /** Close the server (its calls abort with `Disconnected`). */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#server.close().catch(() => {});
    this.#shut();
  }
}
