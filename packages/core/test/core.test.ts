import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type CallContext,
  ClientCancelled,
  Disconnected,
  type ServerHost,
  currentCall,
  type Middleware,
  progressEvent,
  refusal,
  ErrorCode,
  tether,
  handler,
  type InputRequiredResult,
  refusalCode,
} from '../src/index.js';
import { connect, type TestClient } from '../src/testing/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (r: any) => r.content?.[0]?.text;

/** A middleware that reports the events passing its layer (to observe the tap). */
function progressToWire(): Middleware {
  return {
    name: 'progress-to-wire',
    onEvent(_ctx, event, next) {
      if (event.type === 'progress') {
        const params: Record<string, unknown> = { progress: event.progress };
        if (event.total !== undefined) params.total = event.total;
        if (event.message !== undefined) params.message = event.message;
        return next({ type: 'notification', notification: { method: 'notifications/progress', params } });
      }
      return next(event);
    },
  };
}

let kit: TestClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('generator handlers', () => {
  it('return value is the result; only progress events yielded reach the client', async () => {
    const server = tether(new McpServer({ name: 't', version: '1' }), [progressToWire()]);
    server.registerTool('gen', { inputSchema: { n: z.number() } }, handler(async function* (args, ctx) {
      yield 'not an event';
      yield { type: 'progress', progress: 99 }; // looks like one, but was not made by progressEvent
      yield progressEvent(10, 100, 'ten');
      yield 42;
      yield progressEvent(20, 100);
      return { content: [{ type: 'text' as const, text: `n=${args.n} tool=${ctx.toolName}` }] };
    }));
    kit = await connect(server);
    const r = await kit.callTool('gen', { n: 3 }, { progressToken: 'tok' });
    expect(text(r)).toBe('n=3 tool=gen');
    const sent = kit.wire.progress('tok');
    expect(sent.map((p) => p.progress)).toEqual([10, 20]);
    expect(sent[0]!.message).toBe('ten');
    // nothing else leaked: only the two progress notifications and the response
    expect(kit.wire.notifications().length).toBe(2);
  });

  it('a generator stuck on a promise that never settles is abandoned at once; the server answers ping', async () => {
    let entered = false;
    const server = tether(new McpServer({ name: 't', version: '1' }), []);
    server.registerTool('stuck', {}, (async function* () {
      entered = true;
      await new Promise(() => {});
      return { content: [] };
    }) as any);
    kit = await connect(server);
    const call = kit.start('stuck', {}, { id: 'stuck-1' });
    for (let i = 0; i < 500 && !entered; i++) await sleep(2);
    expect(entered).toBe(true);
    const t0 = performance.now();
    await call.cancel('stop');
    await kit.ping();
    expect(performance.now() - t0).toBeLessThan(1_000);
    await sleep(50);
    expect(kit.wire.responseTo('stuck-1')).toBeUndefined();
  });

  it('on abort, gen.return() runs the finally once pending I/O settles, and nothing is sent after', async () => {
    let finallyRan = 0;
    let resolveIo!: () => void;
    let started!: () => void;
    const startedP = new Promise<void>((r) => (started = r));
    const server = tether(new McpServer({ name: 't', version: '1' }), [progressToWire()]);
    server.registerTool('slow', {}, (async function* () {
      try {
        started();
        await new Promise<void>((r) => (resolveIo = r));
        yield progressEvent(50, 100, 'after io');
        return { content: [] };
      } finally {
        finallyRan++;
      }
    }) as any);
    kit = await connect(server);
    const call = kit.start('slow', {}, { id: 'slow-1', progressToken: 'p' });
    await startedP;
    await call.cancel('user');
    await sleep(5);
    expect(finallyRan).toBe(0); // still awaiting the I/O: JS cannot interrupt an await
    resolveIo();
    await sleep(20);
    expect(finallyRan).toBe(1);
    expect(kit.wire.progress('p')).toEqual([]);
    expect(kit.wire.responseTo('slow-1')).toBeUndefined();
  });
});

describe('chain', () => {
  it('order is list order; code after await next() runs after the generator finished', async () => {
    const trace: string[] = [];
    const mw = (name: string): Middleware => ({
      name,
      async handle(_ctx, next) {
        trace.push(`${name}:before`);
        const r = await next();
        trace.push(`${name}:after`);
        return r;
      },
    });
    const server = tether(new McpServer({ name: 't', version: '1' }), [mw('a'), mw('b'), mw('c')]);
    server.registerTool('g', {}, (async function* () {
      trace.push('gen:start');
      await sleep(20);
      yield progressEvent(1);
      await sleep(20);
      trace.push('gen:end');
      return { content: [] };
    }) as any);
    kit = await connect(server);
    await kit.callTool('g');
    expect(trace).toEqual(['a:before', 'b:before', 'c:before', 'gen:start', 'gen:end', 'c:after', 'b:after', 'a:after']);
  });

  it('a call aborted before its handler starts never runs the handler (gate)', async () => {
    let ran = 0;
    let secondRan = 0;
    const gate: Middleware = {
      name: 'abort-first',
      async handle(ctx, next) {
        ctx.abort(new ClientCancelled('test'));
        return next();
      },
    };
    const after: Middleware = { name: 'after', handle: async (_c, next) => (secondRan++, next()) };
    const server = tether(new McpServer({ name: 't', version: '1' }), [gate, after]);
    server.registerTool('never', {}, async () => {
      ran++;
      return { content: [] };
    });
    kit = await connect(server);
    const call = kit.start('never', {}, { id: 'n-1' });
    await sleep(30);
    expect(ran).toBe(0);
    expect(secondRan).toBe(0);
    expect(kit.wire.responseTo(call.id)).toBeUndefined();
    await kit.ping();
  });

  it('tools/call and notifications/cancelled back to back: the handler never runs', async () => {
    let ran = 0;
    const server = tether(new McpServer({ name: 't', version: '1' }), []);
    server.registerTool('x', {}, async () => {
      ran++;
      return { content: [] };
    });
    kit = await connect(server);
    // both writes happen in the same turn, as two messages of one stdio chunk would
    void kit.sendRaw({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'x', arguments: {} } });
    void kit.cancel(77, 'changed my mind');
    await sleep(30);
    expect(ran).toBe(0);
    expect(kit.wire.responseTo(77)).toBeUndefined();
    await kit.ping();
  });

  it('100 concurrent calls each see only their own context', async () => {
    const seen: Array<{ arg: number; id: unknown; sameSignal: boolean; als: boolean }> = [];
    const signals = new Set<AbortSignal>();
    const server = tether(new McpServer({ name: 't', version: '1' }), [
      { name: 'noop', handle: (_c, next) => next() },
    ]);
    server.registerTool('echo', { inputSchema: { i: z.number() } }, async (args, ctx: any) => {
      const c = ctx as CallContext;
      await sleep(Math.random() * 20);
      signals.add(c.signal);
      const als = currentCall();
      seen.push({ arg: args.i, id: c.requestId, sameSignal: als?.signal === c.signal, als: als?.args.i === args.i });
      return { content: [{ type: 'text', text: `${args.i}:${String(c.requestId)}:${String(c.args.i)}` }] };
    });
    kit = await connect(server);
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => kit!.callTool('echo', { i })));
    results.forEach((r, i) => {
      const [a, , b] = String(text(r)).split(':');
      expect(a).toBe(String(i));
      expect(b).toBe(String(i));
    });
    expect(new Set(seen.map((s) => s.id)).size).toBe(100);
    expect(seen.every((s) => s.sameSignal && s.als)).toBe(true);
    expect(signals.size).toBe(100);
  });

  it('a middleware that throws does not take down the server or another call', async () => {
    const server = tether(new McpServer({ name: 't', version: '1' }), [
      {
        name: 'sometimes-throws',
        async handle(ctx, next) {
          if (ctx.args.boom) throw new Error('middleware exploded');
          return next();
        },
      },
    ]);
    server.registerTool('t', { inputSchema: { boom: z.boolean() } }, async ({ boom }) => {
      await sleep(20);
      return { content: [{ type: 'text', text: boom ? 'no' : 'ok' }] };
    });
    kit = await connect(server);
    const [bad, good] = await Promise.allSettled([kit.callTool('t', { boom: true }), kit.callTool('t', { boom: false })]);
    expect(bad.status).toBe('rejected');
    expect(String((bad as PromiseRejectedResult).reason)).toMatch(/middleware exploded/);
    expect(good.status === 'fulfilled' && text(good.value)).toBe('ok');
    await kit.ping();
  });

  it('handlers registered before and after attaching are both wrapped; a refusal is an isError result with a code', async () => {
    const mcp = new McpServer({ name: 't', version: '1' });
    mcp.registerTool('before', {}, async (ctx: any) => ({ content: [{ type: 'text', text: String((ctx as CallContext).toolName) }] }));
    const server = tether(mcp, [
      async (ctx, next) => (ctx.args.refuse ? refusal(ErrorCode.BUSY, 'busy now') : next()),
    ]);
    server.registerTool('after', { inputSchema: { refuse: z.boolean().optional() } }, async (_a, ctx: any) => ({
      content: [{ type: 'text', text: String((ctx as CallContext).toolName) }],
    }));
    kit = await connect(server);
    expect(text(await kit.callTool('before'))).toBe('before');
    expect(text(await kit.callTool('after', {}))).toBe('after');
    const refused = await kit.callTool('after', { refuse: true });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as any).code).toBe('BUSY');
  });

  it('attaching twice fails loudly', () => {
    const server = tether(new McpServer({ name: 't', version: '1' }), []);
    expect(() => tether(server, [])).toThrow(/already/);
  });

  it('cancel for unknown ids, id 0, initialize, or twice is harmless; id 0 really cancels', async () => {
    let aborted0 = false;
    const server = tether(new McpServer({ name: 't', version: '1' }), []);
    server.registerTool('wait', {}, async (ctx: any) => {
      await new Promise<void>((resolve) => (ctx as CallContext).signal.addEventListener('abort', () => resolve()));
      aborted0 = (ctx as CallContext).signal.reason instanceof ClientCancelled;
      return { content: [] };
    });
    kit = await connect(server);
    await kit.cancel('nope', 'unknown');
    await kit.cancel(0, 'initialize was 0');
    const seq0 = kit.wire.messages.length; // the client's initialize also used id 0
    const call = kit.start('wait', {}, { id: 0 });
    await sleep(10);
    await call.cancel('zero');
    await call.cancel('zero again');
    await sleep(20);
    expect(aborted0).toBe(true);
    expect(kit.wire.fromServer().filter((m) => m.seq > seq0 && m.message.id === 0)).toEqual([]);
    await kit.sendRaw({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: { bad: true } } });
    await kit.sendRaw({ jsonrpc: '2.0', method: 'notifications/cancelled' });
    await kit.ping();
  });
});

describe('input_required outcomes', () => {
  const ask = (): InputRequiredResult => ({ resultType: 'input_required', inputRequests: { ok: { method: 'elicitation/create', params: { message: 'ok?' } } } });

  it('handler() accepts an input_required branch; a middleware can serve it by calling next() again', async () => {
    let runs = 0;
    const serve: Middleware = {
      name: 'serve-input',
      async handle(ctx, next) {
        const first = await next();
        if (first.resultType !== 'input_required') return first;
        ctx.inputResponses = { ok: { action: 'accept', content: { ok: true } } };
        return next();
      },
    };
    const server = tether(new McpServer({ name: 't', version: '1' }), [serve]);
    server.registerTool('confirm', { inputSchema: { id: z.string() } }, handler(async (args, ctx) => {
      runs++;
      if (!ctx.inputResponses?.ok) return ask();
      return { content: [{ type: 'text' as const, text: `confirmed ${args.id}` }] };
    }));
    kit = await connect(server);
    expect(text(await kit.callTool('confirm', { id: 'a' }))).toBe('confirmed a');
    expect(runs).toBe(2);
  });

  it('without a middleware to serve it, the call is refused with INPUT_REQUIRED_UNHANDLED', async () => {
    const server = tether(new McpServer({ name: 't', version: '1' }), []);
    server.registerTool('confirm', { inputSchema: {} }, handler(async () => ask()));
    kit = await connect(server);
    expect(refusalCode(await kit.callTool('confirm', {}))).toBe(ErrorCode.INPUT_REQUIRED_UNHANDLED);
  });
});

describe('server host', () => {
  it('host.close() closes the connection: in-flight calls abort as Disconnected, onClose hooks run', async () => {
    let host: ServerHost | undefined;
    let closedHook = 0;
    let reason: unknown;
    const keeper: Middleware = {
      name: 'keeper',
      setup(h) {
        host = h;
        h.onClose(() => closedHook++);
      },
    };
    const server = tether(new McpServer({ name: 't', version: '1' }), [keeper]);
    let entered = false;
    server.registerTool('wait', {}, async (ctx: any) => {
      entered = true;
      await new Promise<void>((resolve) => (ctx as CallContext).signal.addEventListener('abort', () => resolve()));
      reason = (ctx as CallContext).signal.reason;
      return { content: [] };
    });
    kit = await connect(server);
    let clientClosed = false;
    kit.client.onclose = () => {
      clientClosed = true;
    };
    kit.start('wait', {}, { id: 'w1' });
    while (!entered) await sleep(1);
    expect(typeof host?.close).toBe('function');
    await host!.close!();
    await sleep(10);
    expect(reason).toBeInstanceOf(Disconnected);
    // exactly once, although the SDK's InMemoryTransport reports its close twice
    expect(closedHook).toBe(1);
    expect(clientClosed).toBe(true);
    expect(kit.wire.responseTo('w1')).toBeUndefined();
  });
});
