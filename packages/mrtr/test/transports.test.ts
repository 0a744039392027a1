/**
 * 2025-era transports the SDK matrix does not model (it runs in memory on v1 and v2-legacy, and
 * 2026-07-28 through createMcpHandler): stateless and stateful Streamable HTTP, and a 2025-06-18
 * session. SDK 1.x only, through core's HTTP kit.
 */
import { ErrorCode, handler, refusalCode, tether } from '@mcp-tether/core';
import { connectHttp, serveHttp, type HttpHarness, type TestClient } from '@mcp-tether/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ask, mrtr, readInputResult, requireInput } from '../src/index.js';

const text = (r: any): string => r.content?.[0]?.text;
const approval = { confirm: ask.boolean('Approve the refund') };

let kit: TestClient | undefined;
let http: HttpHarness | undefined;
afterEach(async () => {
  await kit?.close();
  await http?.close();
  kit = undefined;
  http = undefined;
});

function refundServer() {
  const server = tether(new McpServer({ name: 'billing', version: '1.0.0' }), [mrtr()]);
  server.registerTool(
    'billing.refund',
    { inputSchema: { id: z.string() } },
    handler(async (args) => {
      const answer = readInputResult(approval);
      if (!answer) return requireInput.elicit(`Refund ${args.id}?`, approval);
      return {
        content: [
          {
            type: 'text' as const,
            text: answer.action === 'accept' && answer.content.confirm ? `refunded ${args.id}` : 'not refunded',
          },
        ],
      };
    }),
  );
  return server;
}

describe('2025-era transports (SDK 1.x)', () => {
  it('stateless Streamable HTTP: refused at once (under 1 s), no elicitation/create', async () => {
    http = await serveHttp(() => refundServer(), { stateful: false });
    kit = await connectHttp(http.url, { elicit: [{ action: 'accept', content: { confirm: true } }] });
    await kit.ping(); // warm up the HTTP path, so the measure is the call alone
    const t0 = performance.now();
    const r = await kit.callTool('billing.refund', { id: 'x' });
    const elapsed = performance.now() - t0;
    expect(refusalCode(r)).toBe(ErrorCode.ELICITATION_UNSUPPORTED);
    expect(text(r)).toMatch(/stateless HTTP/);
    expect(elapsed).toBeLessThan(1_000);
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(0);
    expect(kit.elicitations).toHaveLength(0);
  });

  it('stateful Streamable HTTP: the elicitation rides the POST stream of its tools/call', async () => {
    http = await serveHttp(() => refundServer(), { stateful: true });
    kit = await connectHttp(http.url, { elicit: [{ action: 'accept', content: { confirm: true } }] });
    const r = await kit.callTool('billing.refund', { id: 'inv-9' });
    expect(text(r)).toBe('refunded inv-9');
    const asked = kit.wire.serverRequests('elicitation/create');
    expect(asked).toHaveLength(1);
    const callId = kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!.message.id;
    expect(asked[0]!.stream).toEqual({ kind: 'post', requestIds: [callId] });
  });

  it('a 2025-06-18 session gets elicitation/create without the `mode` field', async () => {
    const server = refundServer();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const send = clientSide.send.bind(clientSide);
    // the SDK client always asks for its latest version; rewrite its initialize to ask for 2025-06-18
    clientSide.send = (m: any, o) =>
      send(m.method === 'initialize' ? { ...m, params: { ...m.params, protocolVersion: '2025-06-18' } } : m, o);
    const client = new Client({ name: 'old', version: '1' }, { capabilities: { elicitation: {} } });
    const received: any[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      received.push(req.params);
      return { action: 'accept', content: { confirm: true } };
    });
    await server.connect(serverSide);
    await client.connect(clientSide);
    try {
      const r = await client.callTool({ name: 'billing.refund', arguments: { id: 'old' } });
      expect(text(r)).toBe('refunded old');
      expect(received).toHaveLength(1);
      expect(received[0]).not.toHaveProperty('mode');
      expect(received[0].requestedSchema.required).toEqual(['confirm']);
    } finally {
      await client.close();
      await server.close();
    }
  });
});
