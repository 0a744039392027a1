/**
 * The servers under test, built the way a user would build them, and the in-memory connection.
 *
 * - `bare`: an SDK `McpServer` with the tool registered as usual.
 * - `full`: the same server with all six tether middlewares attached through `tether()`, defaults.
 * FastMCP lives in servers-fastmcp.ts, so that scenarios without it do not load it (heap, start-up).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { cancel } from '@mcp-tether/cancel';
import { tether, type AttachOptions, type Middleware } from '@mcp-tether/core';
import { heartbeat, type HeartbeatOptions } from '@mcp-tether/heartbeat';
import { logChannel } from '@mcp-tether/log-channel';
import { mrtr } from '@mcp-tether/mrtr';
import { mutex } from '@mcp-tether/mutex';
import { progressMiddleware } from '@mcp-tether/progress';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';

export const INFO = { name: 'bench', version: '1.0.0' } as const;

/** The trivial tool every server serves: echo a number back as text. */
export const echoSchema = { n: z.number() };
export const echoResult = (n: number) => ({ content: [{ type: 'text' as const, text: String(n) }] });

/** Options of {@link fullStack}. */
export interface FullStackOptions {
  heartbeat?: HeartbeatOptions;
}

/**
 * All six middlewares, defaults, in the order their READMEs recommend: cancel outermost, heartbeat
 * outside progress, mrtr before mutex.
 */
export function fullStack(options: FullStackOptions = {}): Middleware[] {
  return [cancel(), heartbeat(options.heartbeat), progressMiddleware(), logChannel(), mrtr(), mutex()];
}

export function newMcpServer(): McpServer {
  return new McpServer(INFO);
}

/** A server with the trivial `echo` tool: bare, or with the given middlewares (and `tether()` options). */
export function echoServer(middlewares?: Middleware[], options?: AttachOptions): McpServer {
  const server = newMcpServer();
  if (middlewares) tether(server, middlewares, options);
  server.registerTool('echo', { inputSchema: echoSchema }, async ({ n }) => echoResult(n));
  return server;
}

const als = new AsyncLocalStorage<{ n: number }>();

/** The bare server, its tool callback run in `AsyncLocalStorage.run` (the cost of any ALS-based context, without tether). */
export function echoServerWithAls(): McpServer {
  const server = newMcpServer();
  server.registerTool('echo', { inputSchema: echoSchema }, ({ n }) =>
    als.run({ n }, async () => echoResult(als.getStore()!.n)),
  );
  return server;
}

/** Something that serves a transport: an SDK `McpServer`, or a FastMCP-like `connect` that returns a session. */
export type Servable = McpServer | { connect(transport: Transport): Promise<{ close(): Promise<void> }> };

export interface Connection {
  client: Client;
  clientTransport: InMemoryTransport;
  serverTransport: InMemoryTransport;
  close(): Promise<void>;
}

/** Connect a real SDK client to `server` over the SDK's in-memory transport. */
export async function connectInMemory(
  server: Servable,
  client = new Client({ name: 'bench-client', version: '1.0.0' }),
): Promise<Connection> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  let closeServer: () => Promise<void>;
  if (!(server instanceof McpServer)) {
    // FastMCP.connect waits for the client's capabilities (it polls): connect both at once.
    const [session] = await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
    closeServer = () => session.close();
  } else {
    await server.connect(serverTransport);
    await client.connect(clientTransport);
    closeServer = () => server.close();
  }
  return {
    client,
    clientTransport,
    serverTransport,
    close: async () => {
      await client.close().catch(() => {});
      await closeServer().catch(() => {});
    },
  };
}

/**
 * Observe every message arriving at the server before the SDK's `Protocol` sees it (it chains an
 * `onmessage` that was already set only at connect time, so wrap after connecting).
 */
export function tapServerInbound(transport: Transport, fn: (message: Record<string, any>) => void): void {
  const inner = transport.onmessage;
  transport.onmessage = (message, extra) => {
    fn(message as Record<string, any>);
    inner?.(message, extra);
  };
}
