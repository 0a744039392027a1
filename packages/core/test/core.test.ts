import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type CallContext,
  ClientCancelled,
  currentCall,
  requireCall,
  type Middleware,
  progressEvent,
  refusal,
  ErrorCode,
  tether,
  handler,
  lingeringWork,
  ProtocolError,
  JsonRpcErrorCode,
  type ServerHost,
  Disconnected,
  type InputRequiredResult,
  refusalCode,
} from '../src/index.js';
import { describeEachSdk, type MatrixClient } from '@mcp-tether/testing/matrix';
import { pause, until } from '@mcp-tether/testing';

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

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describeEachSdk('generator handlers', (sdk) => {
  it('return value is the result; only progress events yielded reach the client', async () => {
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [progressToWire()]);
      server.registerTool(
        'gen',
        { inputSchema: { n: z.number() } },
        handler(async function* (args: { n: number }, ctx) {
          yield 'not an event';
          yield { type: 'progress', progress: 99 }; // looks like one, but was not made by progressEvent
          yield progressEvent(10, 100, 'ten');
          yield 42;
          yield progressEvent(20, 100);
          return { content: [{ type: 'text' as const, text: `n=${args.n} tool=${ctx.toolName}` }] };
        }),
      );
      return server;
    });
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
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), []);
      server.registerTool('stuck', {}, async function* () {
        entered = true;
        await new Promise(() => {});
        return { content: [] };
      } as any);
      return server;
    });
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
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [progressToWire()]);
      server.registerTool('slow', {}, async function* () {
        try {
          started();
          await new Promise<void>((r) => (resolveIo = r));
          yield progressEvent(50, 100, 'after io');
          return { content: [] };
        } finally {
          finallyRan++;
        }
      } as any);
      return server;
    });
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

  it('lingeringWork(ctx): after next() settled on abort, it resolves only once the abandoned generator really finished', async () => {
    const seen: Array<{ id: unknown; lingering: boolean; finallyAtSettle?: number }> = [];
    let finallyRan = 0;
    let resolveIo!: () => void;
    let started!: () => void;
    const startedP = new Promise<void>((r) => (started = r));
    const settled: Promise<void>[] = [];
    const watcher: Middleware = {
      name: 'watcher',
      async handle(ctx, next) {
        try {
          return await next();
        } finally {
          const work = lingeringWork(ctx);
          seen.push({ id: ctx.requestId, lingering: work !== undefined });
          const entry = seen[seen.length - 1];
          if (work && entry)
            settled.push(
              work.then(() => {
                entry.finallyAtSettle = finallyRan;
              }),
            );
        }
      },
    };
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [watcher]);
      server.registerTool('slow', {}, async function* () {
        try {
          started();
          await new Promise<void>((r) => (resolveIo = r));
          yield progressEvent(50, 100);
          return { content: [] };
        } finally {
          finallyRan++;
        }
      } as any);
      server.registerTool('quick', {}, async function* () {
        yield progressEvent(1, 2);
        return { content: [] };
      } as any);
      return server;
    });
    await kit.callTool('quick');
    expect(seen).toEqual([{ id: expect.anything(), lingering: false }]);
    const call = kit.start('slow', {}, { id: 'linger-1' });
    await startedP;
    await call.cancel('user');
    await sleep(10);
    expect(seen[1]).toMatchObject({ id: 'linger-1', lingering: true });
    expect(finallyRan).toBe(0);
    resolveIo();
    await Promise.all(settled);
    expect(seen[1]!.finallyAtSettle).toBe(1); // resolved after the generator's finally ran
  });
});

describeEachSdk('chain', (sdk) => {
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
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [mw('a'), mw('b'), mw('c')]);
      server.registerTool('g', {}, async function* () {
        trace.push('gen:start');
        await sleep(20);
        yield progressEvent(1);
        await sleep(20);
        trace.push('gen:end');
        return { content: [] };
      } as any);
      return server;
    });
    await kit.callTool('g');
    expect(trace).toEqual([
      'a:before',
      'b:before',
      'c:before',
      'gen:start',
      'gen:end',
      'c:after',
      'b:after',
      'a:after',
    ]);
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
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [gate, after]);
      server.registerTool('never', {}, async () => {
        ran++;
        return { content: [] };
      });
      return server;
    });
    const call = kit.start('never', {}, { id: 'n-1' });
    await sleep(30);
    expect(ran).toBe(0);
    expect(secondRan).toBe(0);
    expect(kit.wire.responseTo(call.id)).toBeUndefined();
    await kit.ping();
  });

  // 2026-07-28 over HTTP has no notifications/cancelled: the v2-modern cancel is covered in v2.test.ts.
  it.skipIf(sdk.era === 'modern')(
    'tools/call and notifications/cancelled back to back: the handler never runs',
    async () => {
      let ran = 0;
      kit = await sdk.connect(() => {
        const server = tether(sdk.createServer(), []);
        server.registerTool('x', {}, async () => {
          ran++;
          return { content: [] };
        });
        return server;
      });
      // both writes happen in the same turn, as two messages of one stdio chunk would
      void kit.sendRaw({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'x', arguments: {} } });
      void kit.cancel(77, 'changed my mind');
      await sleep(30);
      expect(ran).toBe(0);
      expect(kit.wire.responseTo(77)).toBeUndefined();
      await kit.ping();
    },
  );

  it('100 concurrent calls each see only their own context', async () => {
    const seen: Array<{ arg: number; id: unknown; sameSignal: boolean; als: boolean }> = [];
    const signals = new Set<AbortSignal>();
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [{ name: 'noop', handle: (_c, next) => next() }], {
        asyncContext: true,
      });
      server.registerTool('echo', { inputSchema: { i: z.number() } }, async (args: { i: number }, ctx: CallContext) => {
        await sleep(Math.random() * 20);
        signals.add(ctx.signal);
        const als = currentCall();
        seen.push({
          arg: args.i,
          id: ctx.requestId,
          sameSignal: als?.signal === ctx.signal,
          als: als?.args.i === args.i,
        });
        return { content: [{ type: 'text', text: `${args.i}:${String(ctx.requestId)}:${String(ctx.args.i)}` }] };
      });
      return server;
    });
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

  it('async context is off unless asked for: handlers still get ctx, the free functions throw naming the option; false overrides a middleware that asks', async () => {
    const outcomes: string[] = [];
    const probe = (tag: string) => {
      try {
        const c = currentCall();
        outcomes.push(`${tag}:${c === undefined ? 'undefined' : 'found'}`);
      } catch (err) {
        outcomes.push(
          `${tag}:${/asyncContext: true/.test((err as Error).message) ? 'throws naming the option' : (err as Error).message}`,
        );
      }
      try {
        requireCall();
        outcomes.push(`${tag}/require:found`);
      } catch (err) {
        outcomes.push(
          `${tag}/require:${/asyncContext: true/.test((err as Error).message) ? 'throws naming the option' : (err as Error).message}`,
        );
      }
    };
    const asks: Middleware = { name: 'asks', asyncContext: true, handle: (_c, next) => next() };
    for (const [tag, list, options] of [
      ['off', [{ name: 'noop', handle: (_c: CallContext, next: () => Promise<unknown>) => next() }], undefined],
      ['forced-off', [asks], { asyncContext: false }],
    ] as const) {
      kit = await sdk.connect(() => {
        const server = tether(sdk.createServer(), list as unknown as Middleware[], options);
        server.registerTool(
          'echo',
          { inputSchema: { i: z.number() } },
          async (args: { i: number }, ctx: CallContext) => {
            probe(`${tag}/sync`);
            await sleep(1);
            probe(`${tag}/after-await`);
            return { content: [{ type: 'text', text: `${args.i}:${String(ctx.requestId)}` }] };
          },
        );
        return server;
      });
      expect(text(await kit.callTool('echo', { i: 5 }))).toMatch(/^5:/);
      await kit.close();
      kit = undefined;
    }
    expect(outcomes).toEqual(
      ['off/sync', 'off/after-await', 'forced-off/sync', 'forced-off/after-await'].flatMap((t) => [
        `${t}:throws naming the option`,
        `${t}/require:throws naming the option`,
      ]),
    );
  });

  it('a middleware that throws does not take down the server or another call', async () => {
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [
        {
          name: 'sometimes-throws',
          async handle(ctx, next) {
            if (ctx.args.boom) throw new Error('middleware exploded');
            return next();
          },
        },
      ]);
      server.registerTool('t', { inputSchema: { boom: z.boolean() } }, async ({ boom }: { boom: boolean }) => {
        await sleep(20);
        return { content: [{ type: 'text', text: boom ? 'no' : 'ok' }] };
      });
      return server;
    });
    const [bad, good] = await Promise.allSettled([
      kit.callTool('t', { boom: true }),
      kit.callTool('t', { boom: false }),
    ]);
    expect(bad.status).toBe('rejected');
    expect(String((bad as PromiseRejectedResult).reason)).toMatch(/middleware exploded/);
    expect(good.status === 'fulfilled' && text(good.value)).toBe('ok');
    await kit.ping();
  });

  it('handlers registered before and after attaching are both wrapped; a refusal is an isError result with a code', async () => {
    kit = await sdk.connect(() => {
      const mcp = sdk.createServer();
      mcp.registerTool('before', {}, async (ctx: CallContext) => ({
        content: [{ type: 'text', text: String(ctx.toolName) }],
      }));
      const server = tether(mcp, [
        async (ctx, next) => (ctx.args.refuse ? refusal(ErrorCode.BUSY, 'busy now') : next()),
      ]);
      server.registerTool(
        'after',
        { inputSchema: { refuse: z.boolean().optional() } },
        async (_a: unknown, ctx: CallContext) => ({
          content: [{ type: 'text', text: String(ctx.toolName) }],
        }),
      );
      return server;
    });
    expect(text(await kit.callTool('before'))).toBe('before');
    expect(text(await kit.callTool('after', {}))).toBe('after');
    const refused = await kit.callTool('after', { refuse: true });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as any).code).toBe('BUSY');
  });

  it('attaching twice fails loudly', () => {
    const server = tether(sdk.createServer(), []);
    expect(() => tether(server, [])).toThrow(/already/);
  });

  it.skipIf(sdk.era === 'modern')(
    'cancel for unknown ids, id 0, initialize, or twice is harmless; id 0 really cancels',
    async () => {
      let aborted0 = false;
      kit = await sdk.connect(() => {
        const server = tether(sdk.createServer(), []);
        server.registerTool('wait', {}, async (ctx: CallContext) => {
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
          aborted0 = ctx.signal.reason instanceof ClientCancelled;
          return { content: [] };
        });
        return server;
      });
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
    },
  );
});

describeEachSdk('context and host', (sdk) => {
  it('carries the tool annotations, args, request id and a progress token of 0', async () => {
    const seen: CallContext[] = [];
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), []);
      server.registerTool(
        'wipe',
        { inputSchema: { path: z.string() }, annotations: { destructiveHint: true, readOnlyHint: false } },
        async (_a: unknown, ctx: CallContext) => {
          seen.push(ctx);
          return { content: [] };
        },
      );
      return server;
    });
    const call = kit.start('wipe', { path: '/tmp/x' }, { id: 'w-1', progressToken: 0 });
    await call.response();
    expect(seen[0]!.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });
    expect(seen[0]!.args).toEqual({ path: '/tmp/x' });
    expect(seen[0]!.requestId).toBe('w-1');
    expect(seen[0]!.progressToken).toBe(0);
    expect(seen[0]!.era).toBe(sdk.era);
    expect(seen[0]!.host.sdk).toBe(sdk.sdk);
  });

  it('a ProtocolError thrown by a middleware is a JSON-RPC error with its code and data', async () => {
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [
        async () => {
          throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'requestState rejected', { reason: 'tampered' });
        },
      ]);
      server.registerTool('t', {}, async () => ({ content: [] }));
      return server;
    });
    const call = kit.start('t', {}, { id: 'pe-1' });
    const res = await call.response();
    expect(res.error).toMatchObject({ code: -32602, message: 'requestState rejected', data: { reason: 'tampered' } });
  });

  it.skipIf(sdk.era === 'modern')('host: ping the client, session id, close hooks', async () => {
    let host!: ServerHost;
    let closed = 0;
    const server = tether(sdk.createServer(), [
      {
        name: 'h',
        setup: (h) => {
          host = h;
          h.onClose(() => closed++);
        },
      },
    ]);
    kit = await sdk.connect(server, { sessionId: 'sess-1' });
    expect(host.sdk).toBe(sdk.sdk);
    expect(host.sessionId()).toBe('sess-1');
    expect(await host.request('ping', undefined, { timeout: 5_000 })).toEqual({});
    await kit.close();
    kit = undefined;
    expect(closed).toBe(1);
  });
});

describeEachSdk('input_required outcomes', (sdk) => {
  const ask = (): InputRequiredResult => ({
    resultType: 'input_required',
    inputRequests: { ok: { method: 'elicitation/create', params: { message: 'ok?' } } },
  });
  /** Serves an input_required by answering "ok" and running the chain again. */
  const serve: Middleware = {
    name: 'serve-input',
    async handle(ctx, next) {
      const first = await next();
      if (first.resultType !== 'input_required') return first;
      ctx.inputResponses = { ok: { action: 'accept', content: { ok: true } } };
      return next();
    },
  };

  it('handler() accepts an input_required branch; a middleware can serve it by calling next() again', async () => {
    let runs = 0;
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [serve]);
      server.registerTool(
        'confirm',
        { inputSchema: { id: z.string() } },
        handler(async (args: { id: string }, ctx) => {
          runs++;
          if (!ctx.inputResponses?.ok) return ask();
          return { content: [{ type: 'text' as const, text: `confirmed ${args.id}` }] };
        }),
      );
      return server;
    });
    expect(text(await kit.callTool('confirm', { id: 'a' }))).toBe('confirmed a');
    expect(runs).toBe(2);
  });

  it("a tool with an output schema, or a generator tool, can return input_required too (the SDK's output validation does not get in the way)", async () => {
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [serve]);
      server.registerTool(
        'typed',
        { inputSchema: { id: z.string() }, outputSchema: { confirmed: z.string() } },
        handler(async (args: { id: string }, ctx) => {
          if (!ctx.inputResponses?.ok) return ask();
          return { content: [{ type: 'text' as const, text: args.id }], structuredContent: { confirmed: args.id } };
        }),
      );
      server.registerTool(
        'gen',
        { inputSchema: {} },
        handler(async function* (_args: unknown, ctx) {
          yield progressEvent(1);
          if (!ctx.inputResponses?.ok) return ask();
          return { content: [{ type: 'text' as const, text: 'generated' }] };
        }),
      );
      return server;
    });
    const r = await kit.callTool('typed', { id: 'x' });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({ confirmed: 'x' });
    expect(text(await kit.callTool('gen', {}))).toBe('generated');
  });

  // On v2-modern an input_required without a middleware goes to the client (see v2.test.ts).
  it.skipIf(sdk.era === 'modern')(
    'without a middleware to serve it, the call is refused with INPUT_REQUIRED_UNHANDLED',
    async () => {
      kit = await sdk.connect(() => {
        const server = tether(sdk.createServer(), []);
        server.registerTool(
          'confirm',
          { inputSchema: {} },
          handler(async () => ask()),
        );
        return server;
      });
      expect(refusalCode(await kit.callTool('confirm', {}))).toBe(ErrorCode.INPUT_REQUIRED_UNHANDLED);
    },
  );
});

describeEachSdk('server host', (sdk) => {
  it('host.close() closes the connection: in-flight calls abort as Disconnected, onClose hooks run', async () => {
    let host: ServerHost | undefined;
    let closedHook = 0;
    let reason: unknown;
    let entered = false;
    const keeper: Middleware = {
      name: 'keeper',
      setup(h) {
        host = h;
        h.onClose(() => closedHook++);
      },
    };
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [keeper]);
      server.registerTool('wait', {}, async (ctx: CallContext) => {
        entered = true;
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        reason = ctx.signal.reason;
        return { content: [] };
      });
      return server;
    });
    closedHook = 0; // v2-modern: the connect-time server/discover request had its own server, closed since
    let clientClosed = false;
    if (sdk.era === 'legacy') {
      kit.client.onclose = () => {
        clientClosed = true;
      };
    }
    // on v2-modern `host` is the server of the last request: the wait call's, once it started
    kit.start('wait', {}, { id: 'w1' });
    for (let i = 0; i < 500 && !entered; i++) await sleep(2);
    expect(entered).toBe(true);
    expect(typeof host?.close).toBe('function');
    await host!.close!();
    for (let i = 0; i < 100 && reason === undefined; i++) await sleep(2);
    expect(reason).toBeInstanceOf(Disconnected);
    // exactly once, although the SDK's InMemoryTransport reports its close twice
    expect(closedHook).toBe(1);
    if (sdk.era === 'legacy') expect(clientClosed).toBe(true);
    expect(kit.wire.responseTo('w1')).toBeUndefined();
  });
});

describeEachSdk('event loop fairness', (sdk) => {
  it('a generator that yields in a tight loop still lets a cancel for it through, and stops', async () => {
    let iterations = 0;
    let finished = false;
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), []);
      server.registerTool(
        'spin',
        { inputSchema: {} },
        handler(async function* () {
          try {
            for (let i = 0; i < 50_000_000; i++) {
              iterations++;
              yield i;
            }
            return { content: [{ type: 'text' as const, text: 'spun' }] };
          } finally {
            finished = true;
          }
        }),
      );
      return server;
    });
    const call = kit.start('spin', {}, { id: 'spin-1' });
    for (let i = 0; i < 1000 && iterations === 0; i++) await sleep(5);
    await sleep(100);
    await call.cancel('enough');
    for (let i = 0; i < 1000 && !finished; i++) await sleep(5);
    expect(finished).toBe(true); // without turns, the cancel would only be read after 50 M iterations
    expect(iterations).toBeLessThan(50_000_000);
    expect(kit.wire.responseTo('spin-1')).toBeUndefined();
  });
});

describe('initialize cannot be cancelled, whenever the cancel arrives', () => {
  const timings = {
    'in the same read': async () => {},
    'after the request was delivered': async () => {},
    'one microtask later': async () => void (await Promise.resolve()),
    'five microtasks later': async () => {
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  } as const;
  for (const line of ['v1', 'v2'] as const) {
    for (const [when, wait] of Object.entries(timings)) {
      it(`${line}: a cancel ${when} leaves the initialize response alone`, async () => {
        const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
        const { McpServer: McpV1 } = await import('@modelcontextprotocol/sdk/server/mcp.js');
        const { McpServer: McpV2 } = await import('@modelcontextprotocol/server');
        const server = tether(
          line === 'v1' ? new McpV1({ name: 's', version: '1' }) : new McpV2({ name: 's', version: '1' }),
          [],
        ) as unknown as {
          connect(t: unknown): Promise<void>;
          close(): Promise<void>;
        };
        const [client, serverSide] = InMemoryTransport.createLinkedPair();
        const received: Array<Record<string, unknown>> = [];
        client.onmessage = (m) => void received.push(m as Record<string, unknown>);
        await server.connect(serverSide);
        await client.start();
        const init = client.send({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
        });
        if (when !== 'in the same read') await init;
        await wait();
        void client.send({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 1, reason: 'changed my mind' },
        });
        for (let i = 0; i < 200 && !received.some((m) => m.id === 1); i++) await sleep(5);
        expect(received.find((m) => m.id === 1)).toMatchObject({ result: { protocolVersion: '2025-06-18' } });
        await server.close();
      });
    }
  }
});

describeEachSdk('middleware fields, onEnd and onAbort', (sdk) => {
  it('fields: made on the first read only, once per call, for every layer and the handler; the outer middleware wins', async () => {
    let made = 0;
    const seen: unknown[] = [];
    const outer: Middleware = {
      name: 'outer',
      fields: { stamp: (ctx) => ({ id: ctx.requestId, n: ++made }) },
      handle: (ctx, next) => {
        if (ctx.args.early) seen.push((ctx as any).stamp);
        return next();
      },
    };
    const inner: Middleware = { name: 'inner', fields: { stamp: () => 'inner loses' } };
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [outer, inner], { asyncContext: true });
      server.registerTool(
        't',
        { inputSchema: { read: z.boolean(), early: z.boolean() } },
        async (args: { read: boolean }, ctx: CallContext) => {
          if (args.read) {
            const a = (ctx as any).stamp;
            seen.push(a, (ctx as any).stamp === a, currentCall() !== undefined && (currentCall() as any).stamp === a);
          }
          return { content: [] };
        },
      );
      return server;
    });
    await kit.callTool('t', { read: false, early: false });
    expect(made).toBe(0); // never read: never made
    await kit.start('t', { read: true, early: true }, { id: 'f-1' }).response();
    await kit.start('t', { read: true, early: false }, { id: 'f-2' }).response();
    expect(made).toBe(2);
    expect(seen).toEqual([{ id: 'f-1', n: 1 }, { id: 'f-1', n: 1 }, true, true, { id: 'f-2', n: 2 }, true, true]);
  });

  it('fields: assigning replaces the value for that call; a maker that returns undefined runs again on the next read', async () => {
    let calls = 0;
    const ready: unknown[] = [];
    const m: Middleware = {
      name: 'm',
      fields: { later: (ctx) => (ctx.state.has(READY) ? 'now' : (calls++, undefined)), swap: () => 'original' },
      handle: (ctx, next) => {
        ready.push((ctx as any).later);
        ctx.state.set(READY, true);
        (ctx as any).swap = 'replaced';
        return next();
      },
    };
    const READY = Symbol('ready');
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [m]);
      // No input schema: the context is the callback's only argument.
      server.registerTool('t', {}, async (ctx: CallContext) => ({
        content: [{ type: 'text' as const, text: `${(ctx as any).later} ${(ctx as any).swap}` }],
      }));
      return server;
    });
    expect(text(await kit.callTool('t'))).toBe('now replaced');
    expect(ready).toEqual([undefined]);
    expect(calls).toBe(1);
  });

  it('fields: every name a real context already has (own, inherited, internal, v2 view) is refused when attaching; the server stays attachable', async () => {
    let seen!: CallContext;
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [{ name: 'any', fields: { extra: () => 1 } }]);
      server.registerTool('t', {}, async (ctx: CallContext) => {
        seen = ctx;
        return { content: [] };
      });
      return server;
    });
    await kit.callTool('t');
    const names = new Set<string>();
    for (let o: object | null = seen; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
      for (const k of Object.getOwnPropertyNames(o)) {
        // Middleware fields (this test's `extra`, and those of other tests in this process) are
        // accessors on the shared Call prototype: another middleware may provide them too.
        const getter = Object.getOwnPropertyDescriptor(o, k)?.get;
        if (getter !== undefined && /\.field\(name\)/.test(getter.toString())) continue;
        names.add(k);
      }
    }
    expect(names.has('extra')).toBe(false); // the field itself is not a reserved name
    names.add('then'); // would make every context a thenable
    expect(names.size).toBeGreaterThan(30);
    for (const name of names) {
      const server = sdk.createServer();
      expect(() => tether(server, [{ name: 'bad', fields: { [name]: () => 1 } }]), name).toThrow(/may not be named/);
      // the refusal left the server unattached: a corrected list attaches
      expect(() => tether(server, [{ name: 'good', fields: { fine: () => 1 } }])).not.toThrow();
    }
    expect(() => tether(sdk.createServer(), [{ name: 'bad', fields: { x: 1 as any } }])).toThrow(
      /fields\.x must be a function/,
    );
  });

  it('fields: servers with different field names get their own fields (no mix-up, even with odd names)', async () => {
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [{ name: 'odd', fields: { 'a\u0000b': () => 'odd' } }]);
      server.registerTool('t', {}, async (ctx: CallContext) => ({
        content: [{ type: 'text' as const, text: String((ctx as any)['a\u0000b']) }],
      }));
      return server;
    });
    const other = tether(sdk.createServer(), [{ name: 'two', fields: { a: () => 'A', b: () => 'B' } }]);
    expect(other).toBeDefined();
    expect(text(await kit.callTool('t'))).toBe('odd');
  });

  it('when: a layer that declines the call is skipped (its onEvent still applies); a throwing when fails that call only', async () => {
    const trace: string[] = [];
    const layer = (name: string, when?: (ctx: CallContext) => boolean): Middleware => ({
      name,
      when,
      handle: (_ctx, next) => (trace.push(name), next()),
      onEvent: (_ctx, event, next) => (trace.push(`${name}:event`), next(event)),
    });
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [
        layer('a'),
        layer('only-destructive', (ctx) => ctx.annotations.destructiveHint === true),
        layer('throws', (ctx) => {
          if (ctx.toolName === 'boom') throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'when threw');
          return false;
        }),
        layer('c'),
      ]);
      const tool = async (ctx: CallContext) => {
        trace.push('handler');
        await ctx.emit({ type: 'log', level: 'info', data: 'x' });
        return { content: [] };
      };
      server.registerTool('safe', { annotations: { destructiveHint: false } }, tool);
      server.registerTool('wipe', { annotations: { destructiveHint: true } }, tool);
      server.registerTool('boom', {}, tool);
      return server;
    });
    await kit.callTool('safe');
    expect(trace).toEqual(['a', 'c', 'handler', 'c:event', 'throws:event', 'only-destructive:event', 'a:event']);
    trace.length = 0;
    await kit.callTool('wipe');
    expect(trace).toEqual([
      'a',
      'only-destructive',
      'c',
      'handler',
      'c:event',
      'throws:event',
      'only-destructive:event',
      'a:event',
    ]);
    trace.length = 0;
    const res = await kit.start('boom', {}, { id: 'w-boom' }).response();
    expect(res.error).toMatchObject({ code: -32602, message: 'when threw' });
    expect(trace).toEqual(['a']);
    await kit.ping();
  });

  it('onEnd: runs innermost first once the chain settled, before the response (what it sends arrives first), on results and errors', async () => {
    const trace: string[] = [];
    const ender = (name: string): Middleware => ({
      name,
      handle: (_ctx, next) => next().finally(() => trace.push(`${name}:after`)),
      onEnd(ctx) {
        trace.push(`${name}:end`);
        if (name !== 'a' || ctx.progressToken === undefined) return undefined;
        // A promise is awaited before the response: this notification goes out first.
        return new Promise<void>((r) => setTimeout(r, 20)).then(() =>
          ctx.emit({
            type: 'notification',
            notification: { method: 'notifications/progress', params: { progress: 100, total: 100 } },
          }),
        );
      },
    });
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [ender('a'), ender('b')]);
      server.registerTool('t', { inputSchema: { fail: z.boolean() } }, async (args: { fail: boolean }) => {
        trace.push('handler');
        if (args.fail) throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'no');
        return { content: [] };
      });
      return server;
    });
    const ok = kit.start('t', { fail: false }, { id: 'e-1', progressToken: 'tok' });
    const res = await ok.response();
    expect(res.result).toBeDefined();
    expect(trace).toEqual(['handler', 'b:after', 'a:after', 'b:end', 'a:end']);
    const [p] = kit.wire.progress('tok');
    expect(p).toMatchObject({ progress: 100, total: 100 });
    expect(p!.seq).toBeLessThan(kit.wire.responseTo('e-1')!.seq);

    trace.length = 0;
    const failed = await kit.start('t', { fail: true }, { id: 'e-2' }).response();
    expect(failed.result?.isError ?? failed.error).toBeTruthy(); // the SDK's own mapping of a handler's throw
    expect(trace).toEqual(['handler', 'b:after', 'a:after', 'b:end', 'a:end']);
  });

  it('when: an async when fails that call with a TypeError (it would always pass); the server serves on', async () => {
    const errors: unknown[] = [];
    kit = await sdk.connect(() => {
      const server = tether(
        sdk.createServer(),
        [
          {
            name: 'async-when',
            when: (async () => {
              throw new Error('rejected later');
            }) as any,
            handle: (_c, next) => next(),
          },
        ],
        {
          onError: (e) => errors.push(e),
        },
      );
      server.registerTool('t', {}, async () => ({ content: [{ type: 'text' as const, text: 'ran' }] }));
      return server;
    });
    const res = await kit.start('t', {}, { id: 'aw-1' }).response();
    const message = res.error?.message ?? res.result?.content?.[0]?.text;
    expect(message).toMatch(/when\(ctx\) returned a promise/);
    await pause(20); // its rejection, handled: vitest fails the run on an unhandled one
    await kit.ping();
  });

  it("onEnd runs in the call's async context: currentCall() is the call (a middleware that declares asyncContext turns it on)", async () => {
    const seen: unknown[] = [];
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [
        { name: 'end', asyncContext: true, onEnd: (ctx) => void seen.push(currentCall()?.requestId === ctx.requestId) },
      ]);
      server.registerTool('t', {}, async () => ({ content: [] }));
      return server;
    });
    await kit.start('t', {}, { id: 'ce-1' }).response();
    expect(seen).toEqual([true]);
  });

  it('onEnd: a hook that throws or rejects goes to onError; the response is sent and the server serves on', async () => {
    const errors: unknown[] = [];
    kit = await sdk.connect(() => {
      const server = tether(
        sdk.createServer(),
        [
          {
            name: 'throws',
            onEnd: () => {
              throw new Error('end threw');
            },
          },
          { name: 'rejects', onEnd: () => Promise.reject(new Error('end rejected')) },
        ],
        { onError: (e) => errors.push((e as Error).message) },
      );
      server.registerTool('t', {}, async () => ({ content: [{ type: 'text' as const, text: 'fine' }] }));
      return server;
    });
    expect(text(await kit.callTool('t'))).toBe('fine');
    expect(errors.sort()).toEqual(['end rejected', 'end threw']);
    await kit.ping();
  });

  it('onAbort: one shared listener serves every call (it receives the context)', async () => {
    const aborted: Array<[string, unknown]> = [];
    let handlerSaw: string | undefined;
    const shared = (reason: { kind: string }, ctx: CallContext) => aborted.push([reason.kind, ctx.requestId]);
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    kit = await sdk.connect(() => {
      const server = tether(sdk.createServer(), [
        { name: 'listen', handle: (ctx, next) => (ctx.onAbort(shared), next()) },
      ]);
      server.registerTool('slow', {}, async (ctx: CallContext) => {
        started();
        await new Promise((r) => ctx.onAbort(r));
        handlerSaw = ctx.abortReason?.kind;
        return { content: [] };
      });
      return server;
    });
    kit.start('slow', {}, { id: 'ab-1' });
    await running;
    await kit.cancel('ab-1', 'stop');
    await until(() => handlerSaw !== undefined);
    const kind = sdk.era === 'modern' ? 'disconnect' : 'cancelled';
    expect(handlerSaw).toBe(kind);
    expect(aborted).toEqual([[kind, 'ab-1']]);
  });
});
