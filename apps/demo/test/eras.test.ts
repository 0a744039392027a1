/**
 * Both eras on the demo: a v2 client pinned to 2026-07-28 completes billing.refund through
 * `input_required` and a retry with no server state between the two requests; a 2025-era client
 * still gets a pushed `elicitation/create` for it on the same endpoint.
 */
import { connectHttp } from '@mcp-tether/testing';
import { connectV2, type FactoryContext } from '@mcp-tether/testing/v2';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoApp, formatCents, getInvoice, startHttp, type RunningHttp } from '../src/index.js';
import { textOf } from './helpers.js';

const invoice = getInvoice('INV-2026');
const amount = formatCents(invoice.amountCents);

describe('2026-07-28 (SDK v2 factory, through the v2 test kit)', () => {
  it('billing.refund: input_required, then a retry served by a different app instance', async () => {
    // Two independent apps (own middleware stack, own records): request 1 is served by A, request 2
    // by B. The only thing that links the rounds is what the client echoes (requestState and
    // inputResponses); mrtr's sealing key is per process, as in a real multi-instance deployment
    // configured with shared keys.
    const apps = [createDemoApp(), createDemoApp()];
    const served: number[] = []; // which app served each tools/call
    const factory = (ctx: FactoryContext) => {
      expect(ctx.era).toBe('modern');
      if (ctx.requestInfo?.headers.get('mcp-method') !== 'tools/call') return apps[0]!.createModernServer();
      const which = served.length % 2;
      served.push(which);
      return apps[which]!.createModernServer();
    };
    const kit = await connectV2(factory, { era: 'modern', elicit: [{ action: 'accept', content: { confirm: true } }] });
    try {
      const result = await kit.callTool('billing.refund', { invoiceId: invoice.id });
      expect(textOf(result)).toBe(`Refunded ${amount} to ${invoice.customer} for invoice ${invoice.id}.`);

      const calls = kit.wire.fromClient().filter((m) => m.message.method === 'tools/call');
      expect(calls).toHaveLength(2);
      const [first, retry] = calls.map((m) => m.message);
      expect(first!.id).not.toBe(retry!.id);
      expect(first!.params.requestState).toBeUndefined();
      const firstResult = kit.wire.responseTo(first!.id)!.message.result;
      expect(firstResult.resultType).toBe('input_required');
      expect(firstResult.inputRequests.confirm.method).toBe('elicitation/create');
      expect(firstResult.inputRequests.confirm.params.message).toContain(amount);
      expect(typeof firstResult.requestState).toBe('string');
      expect(retry!.params.requestState).toBe(firstResult.requestState);
      expect(retry!.params.inputResponses.confirm).toMatchObject({ action: 'accept', content: { confirm: true } });
      // No server→client request: the question travelled inside the result.
      expect(kit.wire.serverRequests()).toHaveLength(0);
      // The two tools/call requests were served by fresh instances of different apps.
      expect(served).toEqual([0, 1]);
    } finally {
      await kit.close();
    }
  });

  it('billing.refund declined on 2026-07-28 returns "not refunded"', async () => {
    const app = createDemoApp();
    const kit = await connectV2(() => app.createModernServer(), { era: 'modern', elicit: [{ action: 'decline' }] });
    try {
      expect(textOf(await kit.callTool('billing.refund', { invoiceId: invoice.id }))).toBe(
        `Invoice ${invoice.id}: not refunded (declined).`,
      );
    } finally {
      await kit.close();
    }
  });

  it("test_tool_with_progress: progress on the call's own response stream", async () => {
    const app = createDemoApp({ conformanceFixtures: true });
    const kit = await connectV2(() => app.createModernServer(), { era: 'modern' });
    try {
      const result = await kit.callTool('test_tool_with_progress', {}, { progressToken: 'p-2026' });
      expect(textOf(result)).toContain('executed successfully');
      const values = kit.wire.progress('p-2026').map((p) => p.progress);
      expect(values).toEqual([0, 50, 100]);
      const call = kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!;
      const notes = kit.wire.notifications('notifications/progress');
      expect(notes).toHaveLength(3);
      for (const n of notes) expect(n.stream).toMatchObject({ kind: 'post', requestIds: [call.message.id] });
    } finally {
      await kit.close();
    }
  });
});

describe('one endpoint, both eras (Streamable HTTP on 127.0.0.1)', () => {
  let http: RunningHttp | undefined;
  afterEach(async () => {
    await http?.close();
    http = undefined;
  });

  it('a pinned 2026-07-28 client and a 2025 client both complete billing.refund on /mcp', async () => {
    const app = createDemoApp();
    http = await startHttp({ port: 0, createServer: app.createServer, createModernServer: app.createModernServer });

    // 2026-07-28: a real v2 client over HTTP, pinned; no session is created.
    const asked: unknown[] = [];
    const modern = new Client({ name: 'eras-test', version: '0' }, {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    } as never);
    modern.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params);
      return { action: 'accept', content: { confirm: true } };
    });
    const posts: Array<{ method?: string; session: string | null; body: any }> = [];
    const fetchSpy: typeof fetch = async (input, init) => {
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
      posts.push({ method: init?.method, session: new Headers(init?.headers).get('mcp-session-id'), body });
      return fetch(input, init);
    };
    await modern.connect(new StreamableHTTPClientTransport(http.url, { fetch: fetchSpy }));
    try {
      const result = await modern.callTool({ name: 'billing.refund', arguments: { invoiceId: invoice.id } });
      expect(textOf(result)).toBe(`Refunded ${amount} to ${invoice.customer} for invoice ${invoice.id}.`);
      expect(asked).toHaveLength(1);
      const calls = posts.filter((p) => p.body?.method === 'tools/call');
      expect(calls).toHaveLength(2);
      expect(calls[1]!.body.params.requestState).toEqual(expect.any(String));
      expect(posts.every((p) => p.session === null)).toBe(true);
      expect(http.sessions.size).toBe(0); // nothing went to the stateful leg
    } finally {
      await modern.close();
    }

    // 2025-era: an SDK v1 client on the same URL gets a pushed elicitation/create in its session.
    const legacy = await connectHttp(http.url, { elicit: [{ action: 'accept', content: { confirm: true } }] } as never);
    try {
      expect(http.sessions.size).toBe(1);
      const result = await legacy.callTool('billing.refund', { invoiceId: invoice.id });
      expect(textOf(result)).toBe(`Refunded ${amount} to ${invoice.customer} for invoice ${invoice.id}.`);
      const pushed = legacy.wire.serverRequests('elicitation/create');
      expect(pushed).toHaveLength(1);
      expect(pushed[0]!.message.params.message).toContain(amount);
      expect(legacy.wire.fromServer().some((m) => m.message.result?.resultType === 'input_required')).toBe(false);
    } finally {
      await legacy.close();
    }
  });

  it('keeps Host/Origin validation on the 2026-07-28 leg', async () => {
    const app = createDemoApp();
    http = await startHttp({ port: 0, createServer: app.createServer, createModernServer: app.createModernServer });
    const res = await fetch(http.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        origin: 'http://evil.example.com',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'server/discover',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
      }),
    });
    expect(res.status).toBe(403);
    await res.body?.cancel();
  });
});
