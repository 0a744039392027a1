/**
 * v2-only wire behaviour: `@modelcontextprotocol/server` 2.x on the 2025 era (in memory) and on
 * 2026-07-28 (createMcpHandler in process, client pinned to 2026-07-28).
 */
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpHandler, McpServer, ResourceTemplate } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type CallContext,
  ClientCancelled,
  Disconnected,
  ErrorCode,
  handler,
  type Middleware,
  progressEvent,
  type ServerHost,
  ShuttingDown,
  tether,
} from '../src/index.js';
import { connectV2, type V2TestClient } from '@mcp-tether/testing/v2';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (r: any) => r.content?.[0]?.text;
const CONFIRM = {
  method: 'elicitation/create' as const,
  params: {
    mode: 'form',
    message: 'Refund 12 EUR?',
    requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
  },
};

/** Turns progress events into notifications (what @mcp-tether/progress does, minus throttling). */
const progressToWire: Middleware = {
  name: 'progress-to-wire',
  onEvent(_ctx, event, next) {
    if (event.type !== 'progress') return next(event);
    return next({
      type: 'notification',
      notification: {
        method: 'notifications/progress',
        params: { progress: event.progress, total: event.total, message: event.message },
      },
    });
  },
};

let kit: V2TestClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('v2 adapter: the call context on each era', () => {
  for (const era of ['legacy', 'modern'] as const) {
    it(`${era}: era, protocol version, _meta, client capabilities, channel`, async () => {
      const seen: CallContext[] = [];
      kit = await connectV2(
        () => {
          const server = tether(new McpServer({ name: 't', version: '1' }), []);
          server.registerTool('look', { inputSchema: z.object({}) }, async (_a, ctx) => {
            seen.push(ctx as unknown as CallContext);
            return { content: [{ type: 'text', text: 'ok' }] };
          });
          return server;
        },
        { era, capabilities: { elicitation: { form: {} }, sampling: {} } },
      );
      await kit.callTool(
        'look',
        {},
        { progressToken: 0, meta: { 'io.modelcontextprotocol/logLevel': 'warning', 'x.example/trace': 'abc' } },
      );
      const ctx = seen[0]!;
      expect(ctx.era).toBe(era);
      expect(ctx.progressToken).toBe(0);
      expect(ctx.meta['io.modelcontextprotocol/logLevel']).toBe('warning');
      expect(ctx.meta['x.example/trace']).toBe('abc');
      expect(ctx.clientCapabilities).toEqual({ elicitation: { form: {} }, sampling: {} });
      expect(ctx.toolName).toBe('look');
      if (era === 'modern') {
        expect(ctx.protocolVersion).toBe('2026-07-28');
        // the reserved envelope keys are in ctx.meta, as the client sent them
        expect(ctx.meta['io.modelcontextprotocol/protocolVersion']).toBe('2026-07-28');
        expect(ctx.meta['io.modelcontextprotocol/clientCapabilities']).toEqual({
          elicitation: { form: {} },
          sampling: {},
        });
        expect(ctx.channel).toBe(false);
        expect(ctx.sessionId).toBeUndefined();
        await expect(ctx.request('elicitation/create', CONFIRM.params)).rejects.toThrow(
          /2026-07-28 has no server-to-client requests/,
        );
      } else {
        expect(ctx.protocolVersion).toBe('2025-11-25');
        expect(ctx.channel).toBe(true);
      }
    });
  }

  it('legacy over stateless HTTP (createMcpHandler fallback): no live channel, version from the header', async () => {
    const seen: CallContext[] = [];
    const handlerV2 = createMcpHandler(() => {
      const server = tether(new McpServer({ name: 't', version: '1' }), []);
      server.registerTool('look', { inputSchema: z.object({}) }, async (_a, ctx) => {
        const c = ctx as unknown as CallContext;
        seen.push(c);
        const asked = await c.request('elicitation/create', CONFIRM.params).then(
          () => 'sent',
          (e: Error) => e.message,
        );
        return { content: [{ type: 'text', text: asked }] };
      });
      return server;
    });
    const client = new Client({ name: 'legacy-http', version: '1' }, { capabilities: { elicitation: { form: {} } } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://tether.test/mcp'), {
        fetch: (u, i) => handlerV2.fetch(new Request(u as string, i)),
      }),
    );
    try {
      const r = await client.callTool({ name: 'look', arguments: {} });
      expect(text(r)).toMatch(/no live channel/);
      expect(seen[0]!.era).toBe('legacy');
      expect(seen[0]!.channel).toBe(false);
      expect(seen[0]!.protocolVersion).toBe('2025-11-25');
    } finally {
      await client.close();
      await handlerV2.close();
    }
  });

  it('modern: per-request capabilities, not remembered between requests', async () => {
    const caps: unknown[] = [];
    const factory = () => {
      const server = tether(new McpServer({ name: 't', version: '1' }), []);
      server.registerTool('caps', { inputSchema: z.object({}) }, async (_a, ctx) => {
        caps.push((ctx as unknown as CallContext).clientCapabilities);
        return { content: [] };
      });
      return server;
    };
    kit = await connectV2(factory, { era: 'modern', capabilities: { sampling: {} } });
    await kit.callTool('caps');
    // a raw request declaring other capabilities
    const call = kit.start(
      'caps',
      {},
      { id: 'raw-caps', meta: { 'io.modelcontextprotocol/clientCapabilities': { roots: {} } } },
    );
    await call.response();
    expect(caps).toEqual([{ sampling: {} }, { roots: {} }]);
  });

  it('modern: the principal is the token client id', async () => {
    let principal: string | undefined;
    kit = await connectV2(
      () => {
        const server = tether(new McpServer({ name: 't', version: '1' }), []);
        server.registerTool('who', { inputSchema: z.object({}) }, async (_a, ctx) => {
          principal = (ctx as unknown as CallContext).principal;
          return { content: [] };
        });
        return server;
      },
      {
        era: 'modern',
        authInfo: { token: 't0k3n', clientId: 'client-42', scopes: [], expiresAt: Date.now() / 1000 + 60 },
      },
    );
    await kit.callTool('who');
    expect(principal).toBe('client-42');
  });

  it('a v2 SDK-style callback keeps working: ctx.mcpReq and ctx.http are there, mcpReq.signal is the call signal', async () => {
    let sameSignal = false;
    let hasNotify = false;
    kit = await connectV2(() => {
      const server = tether(new McpServer({ name: 't', version: '1' }), []);
      server.registerTool('sdk-style', { inputSchema: z.object({}) }, async (_a, ctx) => {
        sameSignal = ctx.mcpReq.signal === (ctx as unknown as CallContext).signal;
        hasNotify = typeof ctx.mcpReq.notify === 'function';
        return { content: [{ type: 'text', text: String(ctx.mcpReq.id) }] };
      });
      return server;
    });
    const r = await kit.callTool('sdk-style');
    expect(text(r)).toBe('1');
    expect(sameSignal).toBe(true);
    expect(hasNotify).toBe(true);
  });
});

describe('v2 adapter: input_required', () => {
  /** A plain handler returning core-shape input_required with a string requestState (what @mcp-tether/mrtr produces once sealed). */
  function refundServer(bodyRuns: { n: number }, states: unknown[]) {
    const server = tether(new McpServer({ name: 'billing', version: '1' }), []);
    server.registerTool(
      'billing.refund',
      { inputSchema: z.object({ amount: z.number() }), annotations: { destructiveHint: true } },
      handler(async (args, ctx) => {
        states.push({ inputResponses: ctx.inputResponses, requestState: ctx.requestState });
        const answer = ctx.inputResponses?.confirm as { action?: string; content?: { ok?: boolean } } | undefined;
        if (!answer)
          return {
            resultType: 'input_required' as const,
            inputRequests: { confirm: CONFIRM },
            requestState: `refund:${args.amount}`,
          };
        bodyRuns.n++;
        return {
          content: [
            {
              type: 'text' as const,
              text:
                answer.content?.ok && ctx.requestState === `refund:${args.amount}`
                  ? `refunded ${args.amount}`
                  : 'not refunded',
            },
          ],
        };
      }),
    );
    return server;
  }

  it("modern: the handler's input_required reaches a 2026-07-28 client, which retries; no state kept between requests", async () => {
    const bodyRuns = { n: 0 };
    const states: unknown[] = [];
    kit = await connectV2(() => refundServer(bodyRuns, states), {
      era: 'modern',
      elicit: [{ action: 'accept', content: { ok: true } }],
    });
    const r = await kit.callTool('billing.refund', { amount: 12 });
    expect(text(r)).toBe('refunded 12');
    expect(bodyRuns.n).toBe(1);
    const calls = kit.wire.fromClient().filter((m) => m.message.method === 'tools/call');
    expect(calls).toHaveLength(2);
    expect(calls[0]!.message.id).not.toBe(calls[1]!.message.id);
    const first = kit.wire.responseTo(calls[0]!.message.id)!.message.result;
    expect(first).toMatchObject({
      resultType: 'input_required',
      inputRequests: { confirm: CONFIRM },
      requestState: 'refund:12',
    });
    expect(calls[1]!.message.params).toMatchObject({
      requestState: 'refund:12',
      inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
    });
    // each request had its own server instance: discover + two calls = three servers, nothing shared
    expect(kit.servers).toHaveLength(3);
    expect(new Set(kit.servers).size).toBe(3);
    expect(states).toEqual([
      { inputResponses: undefined, requestState: undefined },
      { inputResponses: { confirm: { action: 'accept', content: { ok: true } } }, requestState: 'refund:12' },
    ]);
    expect(kit.elicitations).toHaveLength(1);
  });

  it('modern: a raw retry carries inputResponses and requestState into ctx; malformed entries are dropped', async () => {
    const states: any[] = [];
    kit = await connectV2(() => refundServer({ n: 0 }, states), { era: 'modern', capabilities: { elicitation: {} } });
    const r = await kit.sendRaw({
      jsonrpc: '2.0',
      id: 'retry-1',
      method: 'tools/call',
      params: {
        name: 'billing.refund',
        arguments: { amount: 5 },
        requestState: 'refund:5',
        inputResponses: { confirm: { action: 'accept', content: { ok: true } }, junk: 12345 },
      },
    });
    void r;
    const res = await kit.wire.waitFor((m) => m.message.id === 'retry-1' && m.direction === 'server->client');
    expect(res.message.result.content[0].text).toBe('refunded 5');
    expect(states[0].inputResponses).toEqual({ confirm: { action: 'accept', content: { ok: true } } });
    expect(states[0].requestState).toBe('refund:5');
  });

  it('modern: input_required asking for a capability the request did not declare is -32021 (the SDK seam still applies)', async () => {
    kit = await connectV2(() => refundServer({ n: 0 }, []), { era: 'modern', capabilities: { sampling: {} } });
    await expect(kit.callTool('billing.refund', { amount: 1 })).rejects.toMatchObject({ code: -32021 });
  });

  it('modern: an unsealed (non-string) requestState never crosses the wire: INPUT_REQUIRED_UNHANDLED', async () => {
    kit = await connectV2(
      () => {
        const server = tether(new McpServer({ name: 't', version: '1' }), []);
        server.registerTool(
          'raw-state',
          { inputSchema: z.object({}) },
          handler(async () => ({
            resultType: 'input_required' as const,
            inputRequests: { confirm: CONFIRM },
            requestState: { step: 1 },
          })),
        );
        return server;
      },
      { era: 'modern', elicit: [{ action: 'accept', content: { ok: true } }] },
    );
    const r = await kit.callTool('raw-state');
    expect(r.isError).toBe(true);
    expect((r.structuredContent as any).code).toBe(ErrorCode.INPUT_REQUIRED_UNHANDLED);
    expect(JSON.stringify(kit.wire.fromServer())).not.toContain('"step"');
  });

  it('legacy: an unserved input_required is refused once; the SDK legacy shim never runs (no elicitation on the wire)', async () => {
    const bodyRuns = { n: 0 };
    const states: unknown[] = [];
    kit = await connectV2(() => refundServer(bodyRuns, states), {
      era: 'legacy',
      elicit: [{ action: 'accept', content: { ok: true } }],
    });
    const r = await kit.callTool('billing.refund', { amount: 12 });
    expect(r.isError).toBe(true);
    expect((r.structuredContent as any).code).toBe(ErrorCode.INPUT_REQUIRED_UNHANDLED);
    expect(kit.wire.serverRequests('elicitation/create')).toEqual([]);
    expect(states).toHaveLength(1); // entered once, not re-entered by the shim
    expect(bodyRuns.n).toBe(0);
  });

  it('legacy: a middleware serving input through ctx.request (as @mcp-tether/mrtr does) re-enters the handler in process', async () => {
    // A minimal stand-in for the mrtr middleware's legacy path.
    const serveInput: Middleware = {
      name: 'serve-input',
      async handle(ctx, next) {
        let result = await next();
        for (let round = 0; round < 3 && result.resultType === 'input_required'; round++) {
          const answers: Record<string, any> = {};
          for (const [key, req] of Object.entries(
            result.inputRequests as Record<string, { method: string; params: any }>,
          )) {
            answers[key] = await ctx.request(req.method, req.params, { timeout: 5_000 });
          }
          ctx.inputResponses = answers;
          ctx.requestState = result.requestState;
          result = await next();
        }
        return result;
      },
    };
    const bodyRuns = { n: 0 };
    kit = await connectV2(
      () => {
        const server = tether(new McpServer({ name: 'billing', version: '1' }), [serveInput]);
        server.registerTool(
          'billing.refund',
          { inputSchema: z.object({ amount: z.number() }) },
          handler(async (args, ctx) => {
            if (!ctx.inputResponses)
              return {
                resultType: 'input_required' as const,
                inputRequests: { confirm: CONFIRM },
                requestState: `refund:${args.amount}`,
              };
            bodyRuns.n++;
            return {
              content: [
                {
                  type: 'text' as const,
                  text: (ctx.inputResponses.confirm as any).content.ok ? `refunded ${args.amount}` : 'no',
                },
              ],
            };
          }),
        );
        return server;
      },
      { era: 'legacy', elicit: [{ action: 'accept', content: { ok: true } }] },
    );
    const r = await kit.callTool('billing.refund', { amount: 7 });
    expect(text(r)).toBe('refunded 7');
    expect(bodyRuns.n).toBe(1);
    // exactly one elicitation, sent by us (not by the SDK shim), with an id other than 0
    const asks = kit.wire.serverRequests('elicitation/create');
    expect(asks).toHaveLength(1);
    expect(asks[0]!.message.id).not.toBe(0);
  });
});

describe('v2 adapter: cancellation', () => {
  it('modern: closing the response stream aborts the call with Disconnected; no response, no more notifications', async () => {
    let reason: unknown;
    let entered!: () => void;
    const enteredP = new Promise<void>((r) => (entered = r));
    let afterAbort = false;
    kit = await connectV2(
      () => {
        const server = tether(new McpServer({ name: 't', version: '1' }), [progressToWire]);
        server.registerTool(
          'long',
          { inputSchema: z.object({}) },
          handler(async function* (_a, ctx) {
            yield progressEvent(1, 10);
            entered();
            await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
            reason = ctx.signal.reason;
            afterAbort = true;
            yield progressEvent(2, 10);
            return { content: [] };
          }),
        );
        return server;
      },
      { era: 'modern' },
    );
    const call = kit.start('long', {}, { id: 'long-1', progressToken: 'lp' });
    await enteredP;
    await kit.wire.waitFor((m) => m.message.method === 'notifications/progress');
    await call.cancel();
    while (!afterAbort) await sleep(2);
    await sleep(20);
    expect(reason).toBeInstanceOf(Disconnected);
    expect((reason as Disconnected).kind).toBe('disconnect');
    expect(kit.wire.responseTo('long-1')).toBeUndefined();
    expect(kit.wire.progress('lp').map((p) => p.progress)).toEqual([1]);
  });

  it('modern: the SDK client aborting a call (AbortSignal) closes the stream, which the server sees as Disconnected', async () => {
    let reason: unknown;
    let entered!: () => void;
    const enteredP = new Promise<void>((r) => (entered = r));
    const done = new Promise<void>((resolveDone) => {
      void (async () => {
        kit = await connectV2(
          () => {
            const server = tether(new McpServer({ name: 't', version: '1' }), []);
            server.registerTool('wait', { inputSchema: z.object({}) }, async (_a, ctx) => {
              const c = ctx as unknown as CallContext;
              entered();
              await new Promise<void>((resolve) => c.signal.addEventListener('abort', () => resolve(), { once: true }));
              reason = c.signal.reason;
              resolveDone();
              return { content: [] };
            });
            return server;
          },
          { era: 'modern' },
        );
      })();
    });
    while (!kit) await sleep(1);
    const ac = new AbortController();
    const p = kit.callTool('wait', {}, { signal: ac.signal });
    await enteredP;
    ac.abort('user pressed stop');
    await expect(p).rejects.toThrow();
    await done;
    expect(reason).toBeInstanceOf(Disconnected);
  });

  it('modern over stdio (serveStdio): notifications/cancelled aborts with ClientCancelled and keeps the reason', async () => {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    let reason: unknown;
    let era: unknown;
    let entered!: () => void;
    const enteredP = new Promise<void>((r) => (entered = r));
    const served = serveStdio(
      () => {
        const server = tether(new McpServer({ name: 't', version: '1' }), []);
        server.registerTool('wait', { inputSchema: z.object({}) }, async (_a, ctx) => {
          const c = ctx as unknown as CallContext;
          era = c.era;
          entered();
          await new Promise<void>((resolve) => c.signal.addEventListener('abort', () => resolve(), { once: true }));
          reason = c.signal.reason;
          return { content: [] };
        });
        return server;
      },
      { transport: serverTransport },
    );
    const client = new Client({ name: 'c', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const sent: string[] = [];
    const send = clientTransport.send.bind(clientTransport);
    clientTransport.send = (m, o) => (sent.push((m as { method?: string }).method ?? 'response'), send(m, o));
    await client.connect(clientTransport);
    try {
      const ac = new AbortController();
      const p = client.callTool({ name: 'wait', arguments: {} }, { signal: ac.signal });
      await enteredP;
      ac.abort('user pressed stop');
      await expect(p).rejects.toThrow();
      for (let i = 0; i < 200 && reason === undefined; i++) await sleep(2);
      expect(era).toBe('modern');
      expect(sent).toEqual(['server/discover', 'tools/call', 'notifications/cancelled']);
      expect(reason).toBeInstanceOf(ClientCancelled);
      expect((reason as ClientCancelled).clientReason).toBe('user pressed stop');
    } finally {
      await client.close();
      await served.close();
    }
  });

  it('modern: a server-side abort (e.g. shutdown) ends the HTTP exchange without a response', async () => {
    let ran = 0;
    kit = await connectV2(
      () => {
        const server = tether(new McpServer({ name: 't', version: '1' }), [
          { name: 'shutting-down', handle: async (ctx, next) => (ctx.abort(new ShuttingDown()), next()) },
        ]);
        server.registerTool('x', { inputSchema: z.object({}) }, async () => (ran++, { content: [] }));
        return server;
      },
      { era: 'modern' },
    );
    const call = kit.start('x', {}, { id: 'sd-1' });
    await call.ended;
    expect(kit.wire.responseTo('sd-1')).toBeUndefined();
    expect(ran).toBe(0);
    // the SDK client is not left waiting for its own timeout either
    const t0 = performance.now();
    await expect(kit.callTool('x', {}, { timeout: 30_000 })).rejects.toThrow();
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it('legacy: notifications/cancelled keeps the client reason; an elicitation in flight is withdrawn', async () => {
    let reason: unknown;
    let elicitationAborted!: () => void;
    const withdrawn = new Promise<void>((r) => (elicitationAborted = r));
    kit = await connectV2(
      () => {
        const server = tether(new McpServer({ name: 't', version: '1' }), []);
        server.registerTool('ask', { inputSchema: z.object({}) }, async (_a, ctx) => {
          const c = ctx as unknown as CallContext;
          try {
            await c.request('elicitation/create', CONFIRM.params);
          } catch {
            reason = c.signal.reason;
          }
          return { content: [] };
        });
        return server;
      },
      {
        era: 'legacy',
        elicit: (_params, { signal }) =>
          new Promise((resolve) => {
            signal.addEventListener('abort', () => {
              elicitationAborted();
              resolve({ action: 'cancel' });
            });
          }),
      },
    );
    const call = kit.start('ask', {}, { id: 'ask-1' });
    await kit.wire.waitFor((m) => m.message.method === 'elicitation/create');
    await call.cancel('user pressed stop');
    await withdrawn;
    await sleep(10);
    expect(reason).toBeInstanceOf(ClientCancelled);
    expect((reason as ClientCancelled).clientReason).toBe('user pressed stop');
    expect(kit.wire.responseTo('ask-1')).toBeUndefined();
    // the elicitation was related to the call and withdrawn with notifications/cancelled
    const cancelForAsk = kit.wire.notifications('notifications/cancelled');
    expect(cancelForAsk.map((m) => m.message.params.requestId)).toEqual([
      kit.wire.serverRequests('elicitation/create')[0]!.message.id,
    ]);
  });
});

describe('v2 adapter: notifications', () => {
  it("modern: progress rides the call's own response stream, before its response, for each of two concurrent calls", async () => {
    kit = await connectV2(
      () => {
        const server = tether(new McpServer({ name: 't', version: '1' }), [progressToWire]);
        server.registerTool(
          'steps',
          { inputSchema: z.object({ tag: z.string() }) },
          handler(async function* (args) {
            for (let i = 1; i <= 3; i++) {
              await sleep(5);
              yield progressEvent(i, 3, `${args.tag} ${i}`);
            }
            return { content: [{ type: 'text' as const, text: args.tag }] };
          }),
        );
        return server;
      },
      { era: 'modern' },
    );
    const a = kit.start('steps', { tag: 'a' }, { id: 'call-a', progressToken: 'ta' });
    const b = kit.start('steps', { tag: 'b' }, { id: 'call-b', progressToken: 'tb' });
    await Promise.all([a.response(), b.response()]);
    for (const [id, token] of [
      ['call-a', 'ta'],
      ['call-b', 'tb'],
    ] as const) {
      const onStream = kit.wire.forRequest(id);
      expect(
        onStream.every(
          (m) => m.stream?.kind === 'post' && m.stream.requestIds.length === 1 && m.stream.requestIds[0] === id,
        ),
      ).toBe(true);
      const progress = onStream.filter((m) => m.message.method === 'notifications/progress');
      expect(progress.map((m) => m.message.params.progressToken)).toEqual([token, token, token]);
      expect(progress.map((m) => m.message.params.progress)).toEqual([1, 2, 3]);
      const response = onStream.find((m) => m.message.id === id)!;
      expect(progress.every((m) => m.seq < response.seq)).toBe(true);
    }
  });

  it('modern: a log notification goes out on the call stream only (the level comes per request)', async () => {
    const logToWire: Middleware = {
      name: 'log',
      setup: (host) => host.registerCapabilities({ logging: {} }),
      async handle(ctx, next) {
        const level = ctx.meta['io.modelcontextprotocol/logLevel'];
        if (level)
          await ctx.emit({
            type: 'notification',
            notification: { method: 'notifications/message', params: { level: 'info', data: `at ${String(level)}` } },
          });
        return next();
      },
    };
    kit = await connectV2(
      () => {
        const server = tether(new McpServer({ name: 't', version: '1' }), [logToWire]);
        server.registerTool('x', { inputSchema: z.object({}) }, async () => ({ content: [] }));
        return server;
      },
      { era: 'modern' },
    );
    const quiet = kit.start('x', {}, { id: 'quiet' });
    const loud = kit.start('x', {}, { id: 'loud', meta: { 'io.modelcontextprotocol/logLevel': 'debug' } });
    await Promise.all([quiet.response(), loud.response()]);
    expect(kit.wire.forRequest('quiet').filter((m) => m.message.method)).toEqual([]);
    const logs = kit.wire.forRequest('loud').filter((m) => m.message.method === 'notifications/message');
    expect(logs.map((m) => m.message.params.data)).toEqual(['at debug']);
  });
});

describe('v2 adapter: attaching', () => {
  it('tools registered before attaching, with capabilities.tools given to the constructor, are wrapped', async () => {
    const trace: string[] = [];
    kit = await connectV2(() => {
      const mcp = new McpServer({ name: 't', version: '1' }, { capabilities: { tools: {} } });
      mcp.registerTool(
        'early',
        { inputSchema: z.object({}) },
        handler(async function* (_a, ctx) {
          yield progressEvent(1);
          return { content: [{ type: 'text' as const, text: ctx.toolName ?? '' }] };
        }),
      );
      const server = tether(mcp, [async (ctx, next) => (trace.push(ctx.name), next())]);
      const late = server.registerTool('late', { inputSchema: z.object({}) }, async () => ({
        content: [{ type: 'text', text: 'v1' }],
      }));
      late.update({
        callback: handler(async function* () {
          yield progressEvent(1);
          return { content: [{ type: 'text' as const, text: 'v2' }] };
        }),
      });
      return server;
    });
    expect(text(await kit.callTool('early'))).toBe('early');
    expect(text(await kit.callTool('late'))).toBe('v2');
    expect(trace).toEqual(['early', 'late']);
    const list = (await kit.client.listTools()).tools.map((t: { name: string }) => t.name);
    expect(list).toEqual(['early', 'late']);
  });

  it('prompts/get and resources/read run through the chain', async () => {
    const seen: string[] = [];
    kit = await connectV2(() => {
      const server = tether(new McpServer({ name: 't', version: '1' }), [
        async (ctx, next) => (seen.push(`${ctx.method} ${ctx.name} ${JSON.stringify(ctx.args)}`), next()),
      ]);
      server.registerPrompt('greet', { argsSchema: z.object({ who: z.string() }) }, async ({ who }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `hi ${who}` } }],
      }));
      server.registerResource('doc', 'doc://one', {}, async (uri) => ({ contents: [{ uri: uri.href, text: 'one' }] }));
      server.registerResource('tpl', new ResourceTemplate('doc://t/{id}', { list: undefined }), {}, async (uri) => ({
        contents: [{ uri: uri.href, text: 't' }],
      }));
      return server;
    });
    await kit.client.getPrompt({ name: 'greet', arguments: { who: 'bob' } });
    await kit.client.readResource({ uri: 'doc://one' });
    await kit.client.readResource({ uri: 'doc://t/7' });
    expect(seen).toEqual([
      'prompts/get greet {"who":"bob"}',
      'resources/read doc://one {"uri":"doc://one"}',
      'resources/read doc://t/7 {"uri":"doc://t/7"}',
    ]);
  });

  it('a tools/call handler installed by hand on mcp.server before tether() fails loudly', () => {
    const mcp = new McpServer({ name: 't', version: '1' }, { capabilities: { tools: {} } });
    // McpServer installed tools/call in the constructor; replace it by hand, outside McpServer's installer
    (mcp as any)._toolHandlersInitialized = false;
    mcp.server.setRequestHandler('tools/call', async () => ({ content: [] }));
    expect(() => tether(mcp, [])).toThrow(/installed on mcp.server before tether/);
  });

  it('host.handleRequest owns logging/setLevel even when logging is declared after it', async () => {
    const levels: string[] = [];
    const owner: Middleware = {
      name: 'owner',
      setup(host: ServerHost) {
        host.handleRequest('logging/setLevel', (params) => {
          levels.push(String(params.level));
          return {};
        });
        host.registerCapabilities({ logging: {} }); // makes the SDK install its own setLevel handler
      },
    };
    kit = await connectV2(() => tether(new McpServer({ name: 't', version: '1' }), [owner]));
    await kit.client.setLoggingLevel('error');
    expect(levels).toEqual(['error']);
  });

  it('modern: logging/setLevel does not exist on 2026-07-28 (the SDK answers method not found)', async () => {
    const levels: string[] = [];
    kit = await connectV2(
      () =>
        tether(new McpServer({ name: 't', version: '1' }), [
          {
            name: 'owner',
            setup: (host) => (
              host.registerCapabilities({ logging: {} }),
              host.handleRequest('logging/setLevel', (p) => (levels.push(String(p.level)), {}))
            ),
          },
        ]),
      { era: 'modern' },
    );
    await kit.sendRaw({ jsonrpc: '2.0', id: 'lvl', method: 'logging/setLevel', params: { level: 'debug' } });
    const res = await kit.wire.waitFor((m) => m.message.id === 'lvl' && m.direction === 'server->client');
    expect(res.message.error.code).toBe(-32601);
    expect(levels).toEqual([]);
  });
});
