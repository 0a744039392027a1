/**
 * `ctx.clientKey` / `info.clientKey`: the principal when there is one, else what the transport
 * conveyed under CLIENT_KEY_EXTRA, else undefined. Real SDK clients and servers (v1 and v2) over
 * the SDKs' in-memory transports, whose client side passes the `authInfo` a transport front would;
 * 2026-07-28 through the SDK's own `createMcpHandler` (and `@mcp-tether/http` covers real HTTP).
 */
import { Client as V2Client, InMemoryTransport as V2InMemory } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport as V1InMemory } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer as V1McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as V2McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  anonymousAuthInfo,
  type CallContext,
  CLIENT_KEY_EXTRA,
  identityOf,
  type Middleware,
  type RequestInfo,
  tether,
} from '../src/index.js';
import { connectV2, type V2TestClient } from '@mcp-tether/testing/v2';

type Seen = { principal: string | undefined; clientKey: string | undefined };
type AuthInfo = { token: string; clientId: string; scopes: string[]; extra?: Record<string, unknown> };

/** Records the identity of every call and of a non-call request (`x/who`, answered through the host). */
function recorder(calls: Seen[], infos: Seen[]): Middleware {
  return {
    name: 'who',
    setup(host) {
      host.handleRequest('x/who', (_p, info: RequestInfo) => {
        infos.push({ principal: info.principal, clientKey: info.clientKey });
        return {};
      });
    },
    handle(ctx: CallContext, next) {
      calls.push({ principal: ctx.principal, clientKey: ctx.clientKey });
      return next();
    },
  };
}

const PRINCIPAL: AuthInfo = { token: 't', clientId: 'alice', scopes: [] };
const ANONYMOUS = anonymousAuthInfo('ip:203.0.113.7');
const CASES: Array<[string, AuthInfo | undefined, Seen]> = [
  ['no authInfo (in-memory)', undefined, { principal: undefined, clientKey: undefined }],
  ['a principal', PRINCIPAL, { principal: 'alice', clientKey: 'alice' }],
  ['no principal, a transport key', ANONYMOUS, { principal: undefined, clientKey: 'ip:203.0.113.7' }],
];

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe('identityOf', () => {
  it('reads principal and key; an empty clientId is no principal; a non-string key is ignored', () => {
    expect(identityOf(undefined)).toEqual({ principal: undefined, clientKey: undefined });
    expect(identityOf({ clientId: 'bob', extra: { [CLIENT_KEY_EXTRA]: 'ip:x' } })).toEqual({
      principal: 'bob',
      clientKey: 'bob',
    });
    expect(identityOf(ANONYMOUS)).toEqual({ principal: undefined, clientKey: 'ip:203.0.113.7' });
    expect(identityOf({ clientId: '', extra: { [CLIENT_KEY_EXTRA]: 42 } })).toEqual({
      principal: undefined,
      clientKey: undefined,
    });
    expect(ANONYMOUS.extra[CLIENT_KEY_EXTRA]).toBe('ip:203.0.113.7');
  });
});

describe.each(['v1', 'v2'] as const)('clientKey on SDK %s (2025 era, in memory)', (sdk) => {
  it.each(CASES)('%s', async (_title, authInfo, expected) => {
    const calls: Seen[] = [];
    const infos: Seen[] = [];
    const server = tether(
      sdk === 'v1' ? new V1McpServer({ name: 's', version: '1' }) : new V2McpServer({ name: 's', version: '1' }),
      [recorder(calls, infos)],
    );
    (server as V1McpServer).registerTool('t', { inputSchema: { n: z.number() } }, async () => ({ content: [] }));
    const [clientSide, serverSide] =
      sdk === 'v1' ? V1InMemory.createLinkedPair() : (V2InMemory.createLinkedPair() as never);
    // The client side passes authInfo with every message, as a transport front does for the server.
    const send = clientSide.send.bind(clientSide);
    clientSide.send = (m: never, o?: Record<string, unknown>) => send(m, { ...o, authInfo } as never);
    await (server as V1McpServer).connect(serverSide);
    const client = sdk === 'v1' ? new V1Client({ name: 'c', version: '1' }) : new V2Client({ name: 'c', version: '1' });
    await client.connect(clientSide as never);
    closers.push(async () => {
      await client.close();
      await (server as V1McpServer).close();
    });
    await client.callTool({ name: 't', arguments: { n: 1 } });
    await (client as V1Client).request({ method: 'x/who', params: {} } as never, z.object({}).passthrough());
    expect(calls).toEqual([expected]);
    expect(infos).toEqual([expected]);
  });
});

describe('clientKey on SDK v2, 2026-07-28 (createMcpHandler)', () => {
  it.each(CASES)('%s', async (_title, authInfo, expected) => {
    const calls: Seen[] = [];
    const infos: Seen[] = [];
    const kit: V2TestClient = await connectV2(
      () => {
        const server = tether(new V2McpServer({ name: 's', version: '1' }), [recorder(calls, infos)]);
        server.registerTool('t', { inputSchema: z.object({}) }, async () => ({ content: [] }));
        return server;
      },
      { era: 'modern', ...(authInfo && { authInfo: { ...authInfo, expiresAt: Date.now() / 1000 + 60 } }) },
    );
    closers.push(() => kit.close());
    await kit.callTool('t');
    expect(calls).toEqual([expected]);
  });
});
