/**
 * A lean JSON-RPC client over the SDK's in-memory transport, for scenarios that keep thousands of
 * calls open: it only counts notifications and matches responses to ids. No SDK `Client`, so no
 * per-request timeout timer and no zod parsing on the client side: what this process spends is
 * (almost) all the server's.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LATEST_PROTOCOL_VERSION, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

type Message = Record<string, any>;

export class RawClient {
  readonly transport: InMemoryTransport;
  /** Notifications received, by method. */
  readonly notifications = new Map<string, number>();
  private readonly waiting = new Map<string | number, (m: Message) => void>();
  responses = 0;
  private nextId = 1;

  private constructor(transport: InMemoryTransport) {
    this.transport = transport;
    transport.onmessage = (m) => this.onmessage(m as Message);
  }

  static async connect(server: McpServer): Promise<RawClient> {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const c = new RawClient(clientTransport);
    await server.connect(serverTransport);
    await clientTransport.start();
    await c.request('initialize', {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'raw', version: '1.0.0' },
    });
    await c.notify('notifications/initialized');
    return c;
  }

  private onmessage(m: Message): void {
    if (typeof m.method === 'string') {
      if (m.id === undefined) this.notifications.set(m.method, (this.notifications.get(m.method) ?? 0) + 1);
      return;
    }
    this.responses++;
    const w = this.waiting.get(m.id);
    if (w) {
      this.waiting.delete(m.id);
      w(m);
    }
  }

  count(method: string): number {
    return this.notifications.get(method) ?? 0;
  }

  /** Send a request; resolves with the response message (result or error). */
  request(method: string, params: Message = {}): Promise<Message> {
    const id = this.nextId++;
    const p = new Promise<Message>((resolve) => this.waiting.set(id, resolve));
    void this.transport.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage);
    return p;
  }

  notify(method: string, params?: Message): Promise<void> {
    return this.transport.send({ jsonrpc: '2.0', method, ...(params ? { params } : {}) } as JSONRPCMessage);
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
