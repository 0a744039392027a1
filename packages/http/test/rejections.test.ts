/**
 * Issue 26, F3 on the wire: client mistakes the SDK 2.x `createMcpHandler` answers itself (headers
 * that disagree with the body, a bad envelope, an unsupported revision, 2025-era traffic on a
 * modern-only endpoint) are answered as before and counted (`stats.invalidRequests`), never reported
 * to `onError`; a real fault still is. One case per message prefix of `SDK_REJECTION_PREFIXES`
 * (`src/rejections.ts`) and per cell of the installed SDK's ladder the front lets through: an SDK
 * that renames a message fails here (the error reaches `onError`, the counter stays).
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createMcpHttp, type Listening, type McpHttp, type McpHttpOptions } from '../src/index.js';
import { v1Server, v2Server } from './fixtures/app.js';
import { call, META26, post, rawSession, V25, V26 } from './helpers.js';

let front: McpHttp | undefined;
let at: Listening;
const errors: Error[] = [];
afterEach(async () => {
  await front?.close();
  front = undefined;
  errors.length = 0;
});

/** A 2.x server whose `region` tool mirrors its argument in an `Mcp-Param-Region` header (`x-mcp-header`). */
function modernServer() {
  const s = v2Server();
  s.registerTool(
    'region',
    { inputSchema: z.object({ region: z.string().meta({ 'x-mcp-header': 'Region' }) }) },
    async ({ region }) => ({ content: [{ type: 'text' as const, text: `region ${region}` }] }),
  );
  return s;
}

async function start(o: Partial<McpHttpOptions> = {}) {
  front = createMcpHttp({
    legacy: () => v1Server(),
    modern: () => modernServer(),
    onError: (e) => errors.push(e),
    ...o,
  });
  at = await front.listen(0);
}

const h26 = (method: string, name?: string) => ({
  'mcp-protocol-version': V26,
  'mcp-method': method,
  ...(name !== undefined && { 'mcp-name': name }),
});
const call26 = (id: number, name: string, args: Record<string, unknown> = {}, meta: unknown = META26) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, _meta: meta },
});

/** [what, headers, body, HTTP status, JSON-RPC code, id echoed] */
type Case = [string, Record<string, string>, unknown, number, number, number | null];
const both: Case[] = [
  ['Mcp-Method disagrees with the method', h26('tools/list', 'echo'), call26(1, 'echo'), 400, -32020, 1],
  ['Mcp-Method missing', { 'mcp-protocol-version': V26, 'mcp-name': 'echo' }, call26(2, 'echo'), 400, -32020, 2],
  [
    'MCP-Protocol-Version missing',
    { 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
    call26(3, 'echo'),
    400,
    -32020,
    3,
  ],
  [
    'MCP-Protocol-Version disagrees with the envelope',
    { ...h26('tools/call', 'echo'), 'mcp-protocol-version': '2026-08-01' },
    call26(4, 'echo'),
    400,
    -32020,
    4,
  ],
  ['Mcp-Name disagrees with params.name', h26('tools/call', 'other'), call26(5, 'echo'), 400, -32020, 5],
  ['Mcp-Name missing', h26('tools/call'), call26(6, 'echo'), 400, -32020, 6],
  ['Mcp-Name an invalid Base64 sentinel', h26('tools/call', '=?base64?!!!?='), call26(7, 'echo'), 400, -32020, 7],
  ['Mcp-Param-* missing', h26('tools/call', 'region'), call26(8, 'region', { region: 'eu' }), 400, -32020, 8],
  [
    'Mcp-Param-* disagrees with the argument',
    { ...h26('tools/call', 'region'), 'mcp-param-region': 'us' },
    call26(9, 'region', { region: 'eu' }),
    400,
    -32020,
    9,
  ],
  [
    'a 2026-07-28 header without the _meta envelope',
    h26('tools/call', 'echo'),
    { jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'echo', arguments: {} } },
    400,
    -32602,
    10,
  ],
  [
    'an envelope missing a required key',
    h26('tools/call', 'echo'),
    call26(11, 'echo', {}, { 'io.modelcontextprotocol/protocolVersion': V26 }),
    400,
    -32602,
    11,
  ],
  [
    'an unsupported protocol revision (UnsupportedProtocolVersionError)',
    { ...h26('tools/call', 'echo'), 'mcp-protocol-version': '2099-01-01' },
    call26(12, 'echo', {}, { ...META26, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }),
    400,
    -32022,
    12,
  ],
  [
    'a notification whose Mcp-Method disagrees',
    h26('x/y'),
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: META26 } },
    400,
    -32020,
    null,
  ],
  [
    'initialize with a 2026-07-28 header',
    { 'mcp-protocol-version': V26 },
    {
      jsonrpc: '2.0',
      id: 14,
      method: 'initialize',
      params: { protocolVersion: V25, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    },
    400,
    -32020,
    14,
  ],
  ['a batch holding a 2026-07-28 request', {}, [call26(15, 'echo')], 400, -32600, null],
];
const modernOnly: Case[] = [
  [
    'a 2025-era request (no envelope)',
    { 'mcp-protocol-version': V25 },
    { jsonrpc: '2.0', id: 20, method: 'tools/list' },
    400,
    -32022,
    20,
  ],
  ['a 2025-era batch', {}, [{ jsonrpc: '2.0', id: 21, method: 'tools/list' }], 400, -32600, null],
  ['a posted response', {}, { jsonrpc: '2.0', id: 22, result: {} }, 400, -32600, null],
];

async function expectAnswered([what, headers, body, status, code, id]: Case) {
  const before = front!.stats.invalidRequests;
  const r = await post(at.url, body, headers);
  const answer = (await r.json()) as { id: unknown; error: { code: number } };
  expect({ what, status: r.status, code: answer.error?.code, id: answer.id }).toEqual({ what, status, code, id });
  expect({ what, counted: front!.stats.invalidRequests - before, errors: errors.map((e) => e.message) }).toEqual({
    what,
    counted: 1,
    errors: [],
  });
}

describe('client mistakes the SDK answers are counted, not reported to onError', () => {
  it('on a front serving both eras: every header/body mismatch cell of the installed SDK', async () => {
    await start();
    for (const c of both) await expectAnswered(c);
    expect(front!.stats.invalidRequests).toBe(both.length);
  });

  it('on a modern-only front: 2025-era traffic refused by the SDK', async () => {
    await start({ legacy: undefined });
    for (const c of modernOnly) await expectAnswered(c);
  });

  it('a real SDK 2.x client is served (its header retry is not a fault); 2025-era session mistakes never reach onError', async () => {
    await start();
    const client = new ClientV2({ name: 'c', version: '0' }, {
      versionNegotiation: { mode: { pin: V26 } },
    } as never);
    await client.connect(new TransportV2(at.url));
    const r = await client.callTool({ name: 'region', arguments: { region: 'eu' } });
    expect((r.content as Array<{ text: string }>)[0]!.text).toBe('region eu');
    // The client knew no Mcp-Param-Region before it listed the tools: its first try was refused
    // (-32020), it listed and retried. That is the client's normal path, not a server fault.
    expect(front!.stats.invalidRequests).toBe(1);
    await client.close();
    // 2025-era sessions (SDK 1.x transport): its refusals are answered and not reported.
    const h = await rawSession(at.url);
    const noAccept = await fetch(at.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...h },
      body: JSON.stringify(call(30, 'echo')),
    });
    expect(noAccept.status).toBe(406);
    const again = await post(
      at.url,
      {
        jsonrpc: '2.0',
        id: 31,
        method: 'initialize',
        params: { protocolVersion: V25, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      },
      h,
    );
    expect(again.status).toBe(400);
    expect(errors.map((e) => e.message)).toEqual([]);
    expect(front!.stats.invalidRequests).toBe(1);
  });

  it('a real fault still reaches onError: a modern factory that throws', async () => {
    const fault = new Error('factory broke');
    await start({
      modern: () => {
        throw fault;
      },
    });
    const r = await post(at.url, call26(40, 'echo'), h26('tools/call', 'echo'));
    expect(r.status).toBe(500);
    expect(await r.json()).toMatchObject({ id: 40, error: { code: -32603 } });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBe(fault);
    // An error of the server's own class worded like a rejection is a fault all the same.
    class Mine extends Error {}
    const sub = new Mine('Rejected inbound request (sub): a subclass');
    errors.length = 0;
    await front!.close();
    front = undefined;
    await start({
      modern: () => {
        throw sub;
      },
    });
    await post(at.url, call26(41, 'echo'), h26('tools/call', 'echo'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBe(sub);
    expect(front!.stats.invalidRequests).toBe(0);
  });
});
