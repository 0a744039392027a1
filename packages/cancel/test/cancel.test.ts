import { ErrorCode, handler, progressEvent, refusalCode } from '@mcp-tether/core';
import {
  connectHttp,
  firstText,
  pause,
  percentile,
  serveHttp,
  until,
  type HttpHarness,
  type TestClient,
} from '@mcp-tether/testing';
import {
  describeEachSdk,
  sdkTargets,
  tetheredServer,
  type MatrixClient,
  type MatrixConnectOptions,
  type MatrixFactory,
  type MatrixServer,
  type SdkTarget,
} from '@mcp-tether/testing/matrix';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { ClientCancelled, DeadlineExceeded, Disconnected, ShuttingDown, cancel, sleep } from '../src/index.js';

const kits: Array<{ close(): Promise<void> }> = [];
const harnesses: HttpHarness[] = [];
afterEach(async () => {
  for (const k of kits.splice(0)) await k.close().catch(() => {});
  for (const h of harnesses.splice(0)) await h.close().catch(() => {});
});
/**
 * Connect a real client of the target's SDK line. Always through a factory: on `v2-modern` every
 * HTTP request is served by a fresh server, so the middleware instance (created outside the
 * factory) is what they share.
 */
async function open(sdk: SdkTarget, factory: MatrixFactory, options?: MatrixConnectOptions): Promise<MatrixClient> {
  const kit = await sdk.connect(factory, options);
  kits.push(kit);
  return kit;
}

/**
 * The reason a client cancel gives the call's signal: `ClientCancelled` with the client's string on
 * 2025-era sessions (`notifications/cancelled`); `Disconnected` on 2026-07-28 over HTTP, where the
 * client cancels by closing the call's response stream (no reason string travels).
 */
function expectClientCancel(sdk: Pick<SdkTarget, 'era'>, reason: unknown, clientReason: string | undefined): void {
  if (sdk.era === 'modern') {
    expect(reason).toBeInstanceOf(Disconnected);
    return;
  }
  expect(reason).toBeInstanceOf(ClientCancelled);
  expect((reason as ClientCancelled).clientReason).toBe(clientReason);
}

/** Latencies measured in these tests (ms), printed at the end for the benchmark notes. */
const measured: Record<string, number[]> = {};
const record = (label: string, ms: number) => {
  measured[label] ??= [];
  measured[label].push(ms);
};
afterEach(() => {
  for (const [label, values] of Object.entries(measured)) {
    if (!values.length) continue;
    console.log(
      `[latency] ${label}: n=${values.length} p50=${percentile(values, 50).toFixed(2)} ms p99=${percentile(values, 99).toFixed(2)} ms max=${Math.max(...values).toFixed(2)} ms`,
    );
    values.length = 0;
  }
});

type Probe = {
  enteredAt: number;
  abortAt: number;
  finallyAt: number;
  reason: unknown;
  slices: number;
  slicesAtAbort: number;
};
const newProbe = (): Probe => ({
  enteredAt: 0,
  abortAt: 0,
  finallyAt: 0,
  reason: undefined,
  slices: 0,
  slicesAtAbort: -1,
});

/** A tool that sleeps in 100 ms slices (abortable), reporting progress after each slice. */
function registerSlices(server: MatrixServer, probe: Probe) {
  server.registerTool(
    'slices',
    { inputSchema: {} },
    handler(async (_args: unknown, ctx) => {
      probe.enteredAt = performance.now();
      ctx.signal.addEventListener(
        'abort',
        () => {
          probe.abortAt = performance.now();
          probe.reason = ctx.signal.reason;
          probe.slicesAtAbort = probe.slices;
        },
        { once: true },
      );
      try {
        for (let i = 1; i <= 50; i++) {
          await sleep(100, ctx.signal);
          probe.slices++;
          await ctx.emit({
            type: 'notification',
            notification: { method: 'notifications/progress', params: { progress: i, total: 50 } },
          });
        }
        return { content: [{ type: 'text' as const, text: 'all slices done' }] };
      } finally {
        probe.finallyAt = performance.now();
      }
    }),
  );
  server.registerTool(
    'echo',
    { inputSchema: { s: z.string() } },
    handler(async (args: { s: string }) => ({ content: [{ type: 'text' as const, text: args.s }] })),
  );
}

/**
 * The must-show scenario on a connected client: a cancel 300 ms into the `slices` call aborts its
 * signal, `finally` runs, nothing more is sent for that id, and the next call works.
 */
async function cancelMidCall(
  kit: Pick<MatrixClient, 'start' | 'wire' | 'callTool'>,
  label: string,
  era: SdkTarget['era'],
  probe: Probe,
  c: ReturnType<typeof cancel>,
  errors: unknown[],
  bound: number,
) {
  const call = kit.start('slices', {}, { id: 'c-1', progressToken: 'tok' });
  await until(() => probe.enteredAt > 0, 5_000, 'handler entry');
  await pause(300);
  const sentAt = performance.now();
  await call.cancel('user pressed stop');
  await until(() => probe.finallyAt > 0, 5_000, 'finally');
  const abortMs = probe.abortAt - sentAt;
  const finallyMs = probe.finallyAt - sentAt;
  record(`${label} cancel sent -> signal aborted`, abortMs);
  record(`${label} cancel sent -> finally ran`, finallyMs);
  expect(probe.abortAt).toBeGreaterThan(0);
  // generous bounds (the machine is shared; speed belongs in benchmarks)
  expect(abortMs).toBeLessThan(bound);
  expect(finallyMs).toBeLessThan(bound);
  expectClientCancel({ era }, probe.reason, 'user pressed stop');
  // progress i goes out after slice i: the slices before the abort were reported, none after
  // (checked by value: on HTTP a progress sent just before the cancel arrived may be recorded after it)
  await pause(400);
  expect(probe.slicesAtAbort).toBeGreaterThanOrEqual(1);
  const expected = Array.from({ length: probe.slicesAtAbort }, (_, i) => i + 1);
  expect(kit.wire.progress('tok').map((p) => p.progress)).toEqual(expected);
  expect(probe.slices).toBe(probe.slicesAtAbort);
  expect(kit.wire.responseTo('c-1')).toBeUndefined();
  expect(kit.wire.fromServer().filter((m) => m.message.id === 'c-1')).toEqual([]);
  // the session (or, on 2026-07-28, the next request) goes on
  expect(firstText(await kit.callTool('echo', { s: 'still here' }))).toBe('still here');
  expect(errors).toEqual([]);
  expect(c.inFlight).toBe(0);
}

describeEachSdk('client cancel (must show)', (sdk) => {
  // legacy in memory: ~1-2 ms idle; modern: the stream close crosses the in-process HTTP handler
  const bound = sdk.era === 'modern' ? 2_000 : 500;

  it('a cancel 300 ms into a call sleeping in 100 ms slices aborts its signal, finally runs, nothing more is sent, the next call works', async () => {
    const probe = newProbe();
    const errors: unknown[] = [];
    const c = cancel();
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c], errors);
      registerSlices(server, probe);
      return server;
    });
    await cancelMidCall(kit, sdk.name, sdk.era, probe, c, errors, bound);
  });

  it('latency sample: 40 calls cancelled at random moments; each signal aborts and finally runs promptly', async () => {
    let entered = 0;
    const finallyAt = new Map<number, number>();
    const c = cancel();
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c]);
      server.registerTool(
        'work',
        { inputSchema: { i: z.number() } },
        handler(async (args: { i: number }, ctx) => {
          entered++;
          try {
            for (;;) await sleep(100, ctx.signal);
          } finally {
            finallyAt.set(args.i, performance.now());
          }
        }),
      );
      return server;
    });
    for (let i = 0; i < 40; i++) {
      const before = entered;
      const call = kit.start('work', { i }, { id: `lat-${i}` });
      await until(() => entered > before, 5_000, 'entry');
      await pause(Math.random() * 30);
      const sentAt = performance.now();
      await call.cancel('stop');
      await until(() => finallyAt.has(i), 5_000, 'finally');
      const ms = finallyAt.get(i)! - sentAt;
      record(`${sdk.name} cancel sent -> finally ran (40 calls)`, ms);
      expect(ms).toBeLessThan(bound);
    }
    await pause(50);
    for (let i = 0; i < 40; i++) expect(kit.wire.responseTo(`lat-${i}`)).toBeUndefined();
    await until(() => c.inFlight === 0, 2_000, 'all calls finished');
  });

  it('a tool that throws after its signal aborted produces no message with that id', async () => {
    const errors: unknown[] = [];
    let threw = false;
    let entered = false;
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [cancel()], errors);
      server.registerTool(
        'thrower',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          entered = true;
          await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }));
          await pause(20);
          await ctx.emit({
            type: 'notification',
            notification: { method: 'notifications/message', params: { level: 'error', data: 'dying' } },
          });
          threw = true;
          throw new Error('late failure after the abort');
        }),
      );
      server.registerTool(
        'late-result',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }));
          await pause(20);
          return { content: [{ type: 'text' as const, text: 'a result nobody asked for' }] };
        }),
      );
      return server;
    });
    const call = kit.start('thrower', {}, { id: 't-1' });
    await until(() => entered);
    await call.cancel();
    const call2 = kit.start('late-result', {}, { id: 't-2' });
    await pause(30);
    await call2.cancel('never mind');
    await until(() => threw);
    await pause(150);
    expect(kit.wire.forRequest('t-1')).toEqual([]);
    expect(kit.wire.forRequest('t-2')).toEqual([]);
    expect(kit.wire.notifications('notifications/message')).toEqual([]);
    await kit.ping();
    expect(errors).toEqual([]);
  });

  it('races are harmless: cancel after the response, for an unknown id, twice, and for id 0 (which really cancels)', async () => {
    const errors: unknown[] = [];
    const reasons: unknown[] = [];
    let entered = 0;
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [cancel()], errors);
      server.registerTool(
        'wait',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          entered++;
          await sleep(10_000, ctx.signal).catch((e: unknown) => {
            reasons.push(e);
            throw e;
          });
          return { content: [] };
        }),
      );
      server.registerTool(
        'quick',
        { inputSchema: {} },
        handler(async () => ({ content: [{ type: 'text' as const, text: 'quick' }] })),
      );
      return server;
    });
    // after the response (modern: its stream already ended, so there is nothing left to close)
    const q = kit.start('quick', {}, { id: 'q-1' });
    expect((await q.response()).result.content[0].text).toBe('quick');
    await q.cancel('too late');
    // unknown id
    await kit.cancel('nobody', 'x');
    // a malformed cancel: 2025-era only (2026-07-28 over HTTP has no notifications/cancelled)
    if (sdk.era === 'legacy') await kit.sendRaw({ jsonrpc: '2.0', method: 'notifications/cancelled', params: {} });
    // id 0, cancelled twice
    const zero = kit.start('wait', {}, { id: 0 });
    await until(() => entered === 1);
    await zero.cancel('zero');
    await zero.cancel('zero again');
    await until(() => reasons.length === 1);
    expectClientCancel(sdk, reasons[0], 'zero');
    await pause(50);
    const callSeq = kit.wire.fromClient().find((m) => m.message.method === 'tools/call' && m.message.id === 0)!.seq;
    expect(kit.wire.fromServer().filter((m) => m.seq > callSeq && m.message.id === 0)).toEqual([]); // (id 0 may also have been initialize's)
    expect(firstText(await kit.callTool('quick'))).toBe('quick');
    expect(reasons).toHaveLength(1);
    expect(errors).toEqual([]);
    expect(kit.clientErrors.filter((e) => !/unknown message ID/i.test(String(e)))).toEqual([]);
  });

  it('closing the connection aborts the call with Disconnected and runs its cleanup', async () => {
    let reason: unknown;
    let cleaned = 0;
    let entered = false;
    const kit = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [cancel()]);
      server.registerTool(
        'wait',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          entered = true;
          ctx.defer(() => void cleaned++);
          await sleep(10_000, ctx.signal).catch((e: unknown) => {
            reason = e;
          });
          return { content: [] };
        }),
      );
      return server;
    });
    kit.start('wait', {}, { id: 'd-1' });
    await until(() => entered);
    await kit.close();
    await until(() => reason !== undefined);
    expect(reason).toBeInstanceOf(Disconnected);
    await until(() => cleaned === 1);
    await pause(20);
    expect(cleaned).toBe(1);
  });

  it.runIf(sdk.era === 'modern')(
    '2026-07-28: each request is a fresh server, yet one cancel() instance sees them all; a stream close is Disconnected',
    async () => {
      const c = cancel();
      let builds = 0;
      const reasons = new Map<string, unknown>();
      let cleaned = 0;
      const kit = await open(sdk, () => {
        builds++;
        const { server } = tetheredServer(sdk, [c]);
        server.registerTool(
          'hold',
          { inputSchema: { who: z.string() } },
          handler(async (args: { who: string }, ctx) => {
            ctx.defer(() => void cleaned++);
            expect(ctx.era).toBe('modern');
            await sleep(10_000, ctx.signal).catch((e: unknown) => {
              reasons.set(args.who, e);
              throw e;
            });
            return { content: [] };
          }),
        );
        return server;
      });
      const before = builds;
      const calls = ['a', 'b', 'c'].map((who) => kit.start('hold', { who }, { id: who }));
      await until(() => c.inFlight === 3, 5_000, 'three calls in flight');
      expect(builds - before).toBeGreaterThanOrEqual(3); // one server per request
      await calls[1]!.cancel();
      await until(() => reasons.has('b') && c.inFlight === 2, 2_000, 'b aborted');
      expect(reasons.get('b')).toBeInstanceOf(Disconnected);
      expect([...reasons.keys()]).toEqual(['b']); // the others go on
      expect(await c.drain(5_000)).toEqual({ aborted: 2, pending: 0 });
      expect(reasons.get('a')).toBeInstanceOf(ShuttingDown);
      expect(reasons.get('c')).toBeInstanceOf(ShuttingDown);
      expect(cleaned).toBe(3);
      for (const who of ['a', 'b', 'c']) expect(kit.wire.responseTo(who)).toBeUndefined();
    },
  );
});

// The v1 kit's stateful Streamable HTTP (serveHttp): the cancel is a `notifications/cancelled` POST
// that reaches the call through the session. (v2-modern HTTP is covered by the matrix above.)
describe('client cancel (must show) over stateful Streamable HTTP [v1]', () => {
  const [v1] = sdkTargets({ only: ['v1'] });
  it.skipIf(!v1)(
    'a cancel 300 ms into a call sleeping in 100 ms slices aborts its signal, finally runs, nothing more is sent, the next call works',
    async () => {
      if (!v1) return; // TETHER_SDK excludes v1
      const probe = newProbe();
      const errors: unknown[] = [];
      const c = cancel();
      const h = await serveHttp(
        () => {
          const { server } = tetheredServer(v1, [c], errors);
          registerSlices(server, probe);
          return server as never;
        },
        { stateful: true },
      );
      harnesses.push(h);
      const kit: TestClient = await connectHttp(h.url);
      kits.push(kit);
      // over HTTP the cancel is a new POST, ~5-30 ms idle, hundreds of ms under load
      await cancelMidCall(kit, 'v1 streamable-http', 'legacy', probe, c, errors, 2_000);
    },
  );
});

describeEachSdk('deadlines', (sdk) => {
  it('a deadline aborts the signal with DeadlineExceeded and answers at once with a TIMEOUT refusal, whatever the handler does later', async () => {
    const c = cancel({ timeoutMs: 10_000, timeouts: { slow: 200 } });
    const errors: unknown[] = [];
    let reason: unknown;
    let finished = false;
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c], errors);
      server.registerTool(
        'slow',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          ctx.signal.addEventListener('abort', () => (reason = ctx.signal.reason), { once: true });
          await pause(1_500); // ignores its signal
          finished = true;
          return { content: [{ type: 'text' as const, text: 'too late' }] };
        }),
      );
      return server;
    });
    const t0 = performance.now();
    const r = await kit.callTool('slow');
    const elapsed = performance.now() - t0;
    record(`${sdk.name} deadline 200 ms -> TIMEOUT refusal received`, elapsed);
    expect(refusalCode(r)).toBe(ErrorCode.TIMEOUT);
    expect(r.isError).toBe(true);
    expect((r.structuredContent as any).timeoutMs).toBe(200);
    expect(finished).toBe(false); // answered before the handler ended
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(1_400);
    expect(reason).toBeInstanceOf(DeadlineExceeded);
    await until(() => finished, 5_000);
    await pause(50);
    // exactly one response for that call
    const id = kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!.message.id;
    expect(kit.wire.fromServer().filter((m) => m.message.id === id)).toHaveLength(1);
    expect(errors).toEqual([]);
    await until(() => c.inFlight === 0, 2_000);
  });

  it('global timeoutMs, per-tool override (record or function), Infinity means none; generator handlers too', async () => {
    const c = cancel({
      timeoutMs: 150,
      timeouts: (ctx) => (ctx.name === 'free' ? Infinity : ctx.name === 'gen' ? 100 : undefined),
    });
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c]);
      const body = handler(async (_args: unknown, ctx) => {
        await sleep(400, ctx.signal);
        return { content: [{ type: 'text' as const, text: 'done' }] };
      });
      server.registerTool('bounded', { inputSchema: {} }, body);
      server.registerTool('free', { inputSchema: {} }, body);
      server.registerTool(
        'gen',
        { inputSchema: {} },
        handler(async function* (_args: unknown, ctx) {
          yield progressEvent(1, 10);
          await sleep(400, ctx.signal);
          return { content: [{ type: 'text' as const, text: 'gen done' }] };
        }),
      );
      return server;
    });
    const [bounded, free, gen] = await Promise.all([
      kit.callTool('bounded'),
      kit.callTool('free'),
      kit.callTool('gen'),
    ]);
    expect(refusalCode(bounded)).toBe('TIMEOUT');
    expect((bounded.structuredContent as any).timeoutMs).toBe(150);
    expect(firstText(free)).toBe('done');
    expect(refusalCode(gen)).toBe('TIMEOUT');
    expect((gen.structuredContent as any).timeoutMs).toBe(100);
  });

  it('prompts get the deadline as a JSON-RPC error carrying data.code TIMEOUT', async () => {
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [cancel({ timeoutMs: 100 })]);
      server.registerPrompt('slow-prompt', {}, async () => {
        await pause(1_000);
        return { messages: [] };
      });
      return server;
    });
    const err = await kit.client.getPrompt({ name: 'slow-prompt' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ data: { code: 'TIMEOUT', timeoutMs: 100 } });
  });

  it('a timeouts function returning garbage fails that call only, with a clear error', async () => {
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [
        cancel({ timeouts: (ctx) => (ctx.name === 'bad' ? (-1 as number) : undefined) }),
      ]);
      const ok = handler(async () => ({ content: [{ type: 'text' as const, text: 'ok' }] }));
      server.registerTool('bad', { inputSchema: {} }, ok);
      server.registerTool('good', { inputSchema: {} }, ok);
      return server;
    });
    const [bad, good] = await Promise.allSettled([kit.callTool('bad'), kit.callTool('good')]);
    expect(bad.status).toBe('rejected');
    expect(String((bad as PromiseRejectedResult).reason)).toMatch(/timeouts\(ctx\)/);
    expect(good.status === 'fulfilled' && firstText(good.value)).toBe('ok');
  });
});

describe('options', () => {
  it('bad options fail loudly at construction', () => {
    expect(() => cancel({ timeoutMs: 0 })).toThrow(TypeError);
    expect(() => cancel({ timeoutMs: -5 })).toThrow(/positive/);
    expect(() => cancel({ timeoutMs: Number.NaN })).toThrow(TypeError);
    expect(() => cancel({ timeouts: { a: 10, b: 'x' as never } })).toThrow(/timeouts\["b"\]/);
    expect(() => cancel({ timeouts: 5 as never })).toThrow(TypeError);
    expect(() => cancel({ timeoutMs: Infinity })).not.toThrow();
  });
});

describeEachSdk('ctx.defer: exactly once', (sdk) => {
  it('on completion: runs once, last registered first, before the response is sent', async () => {
    const order: string[] = [];
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [cancel()]);
      server.registerTool(
        'ok',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          ctx.defer(() => void order.push('first registered'));
          ctx.defer(() => void order.push('second registered'));
          return { content: [{ type: 'text' as const, text: 'ok' }] };
        }),
      );
      return server;
    });
    const r = await kit.callTool('ok');
    const atResponse = [...order];
    await pause(30);
    expect(firstText(r)).toBe('ok');
    expect(atResponse).toEqual(['second registered', 'first registered']);
    expect(order).toEqual(['second registered', 'first registered']);
  });

  it('on abort: runs once, right after the abort, while the handler is still busy, and not again when it returns', async () => {
    const c = cancel();
    let cleanedAt = 0;
    let cleaned = 0;
    let handlerDoneAt = 0;
    let entered = false;
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c]);
      server.registerTool(
        'stubborn',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          entered = true;
          ctx.defer(() => {
            cleaned++;
            cleanedAt = performance.now();
          });
          await pause(500); // ignores its signal
          handlerDoneAt = performance.now();
          return { content: [] };
        }),
      );
      return server;
    });
    const call = kit.start('stubborn', {}, { id: 's-1' });
    await until(() => entered);
    const sentAt = performance.now();
    await call.cancel();
    await until(() => cleaned > 0, 2_000);
    record(`${sdk.name} cancel sent -> defer cleanup ran`, cleanedAt - sentAt);
    expect(handlerDoneAt).toBe(0);
    expect(c.inFlight).toBe(1); // the handler still runs: the call is not finished
    await until(() => handlerDoneAt > 0, 3_000);
    await until(() => c.inFlight === 0, 2_000);
    expect(cleaned).toBe(1);
    expect(cleanedAt).toBeLessThan(handlerDoneAt);
    expect(kit.wire.responseTo('s-1')).toBeUndefined();
  });

  it('a failing cleanup is reported, the others still run, the call and the next one are unaffected; a late defer runs at once', async () => {
    const reported: Array<{ error: unknown; id: unknown }> = [];
    const c = cancel({ onError: (error, ctx) => reported.push({ error, id: ctx.requestId }) });
    const errors: unknown[] = [];
    const ran: string[] = [];
    let late: (() => void) | undefined;
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c], errors);
      server.registerTool(
        'messy',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          ctx.defer(() => void ran.push('a'));
          ctx.defer(() => {
            throw new Error('sync cleanup failure');
          });
          ctx.defer(async () => {
            await pause(5);
            throw new Error('async cleanup failure');
          });
          ctx.defer(() => void ran.push('d'));
          late = () => ctx.defer(() => void ran.push('late'));
          expect(() => ctx.defer('nope' as never)).toThrow(TypeError);
          return { content: [{ type: 'text' as const, text: 'fine' }] };
        }),
      );
      return server;
    });
    expect(firstText(await kit.callTool('messy'))).toBe('fine');
    await until(() => reported.length === 2, 2_000);
    expect(ran).toEqual(['d', 'a']);
    expect(reported.map((r) => String((r.error as Error).message)).sort()).toEqual([
      'async cleanup failure',
      'sync cleanup failure',
    ]);
    late!();
    expect(ran).toEqual(['d', 'a', 'late']);
    expect(firstText(await kit.callTool('messy'))).toBe('fine');
    expect(errors).toEqual([]);
  });

  it('60 calls with random outcomes (complete, throw, client cancel, deadline): every cleanup runs exactly once', async () => {
    const c = cancel({ timeouts: { work: 60 } });
    const counts = new Map<number, number>();
    let entered = 0;
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c]);
      server.registerTool(
        'work',
        { inputSchema: { i: z.number(), ms: z.number(), fail: z.boolean(), abortable: z.boolean() } },
        handler(async (args: { i: number; ms: number; fail: boolean; abortable: boolean }, ctx) => {
          entered++;
          counts.set(args.i, 0);
          ctx.defer(() => void counts.set(args.i, counts.get(args.i)! + 1));
          if (args.abortable) await sleep(args.ms, ctx.signal);
          else await pause(args.ms);
          if (args.fail) throw new Error('planned failure');
          return { content: [{ type: 'text' as const, text: String(args.i) }] };
        }),
      );
      return server;
    });
    const pending: Array<Promise<unknown>> = [];
    const cancelled = new Set<number>();
    for (let i = 0; i < 60; i++) {
      const args = {
        i,
        ms: Math.floor(Math.random() * 100),
        fail: Math.random() < 0.2,
        abortable: Math.random() < 0.7,
      };
      const ac = new AbortController();
      pending.push(kit.callTool('work', args, { signal: ac.signal }).catch(() => undefined));
      if (Math.random() < 0.4) {
        cancelled.add(i);
        setTimeout(() => ac.abort('random cancel'), Math.random() * 80);
      }
    }
    await Promise.all(pending);
    // a call cancelled before it reached the server never entered the handler: count those that did
    await until(() => c.inFlight === 0 && entered === counts.size, 5_000, 'all calls finished');
    await pause(50);
    const notCancelled = Array.from({ length: 60 }, (_, i) => i).filter((i) => !cancelled.has(i));
    for (const i of notCancelled) expect(counts.has(i)).toBe(true);
    expect(counts.size).toBeGreaterThanOrEqual(notCancelled.length);
    // legacy: every request is written before any cancel fires, so every handler entered
    if (sdk.era === 'legacy') expect(counts.size).toBe(60);
    for (const [i, n] of counts) expect([i, n]).toEqual([i, 1]);
  });
});

describeEachSdk('drain', (sdk) => {
  it('covers every server sharing the instance: refuses new calls, aborts in-flight ones with ShuttingDown, waits for their cleanups', async () => {
    const c = cancel();
    const reasons: unknown[] = [];
    let entered = 0;
    let cleaned = 0;
    let builds = 0;
    const build = () => {
      builds++;
      const { server } = tetheredServer(sdk, [c]);
      server.registerTool(
        'work',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          entered++;
          ctx.defer(async () => {
            await pause(100);
            cleaned++;
          });
          await sleep(10_000, ctx.signal).catch((e: unknown) => {
            reasons.push(e);
            throw e;
          });
          return { content: [] };
        }),
      );
      return server;
    };
    const k1 = await open(sdk, build);
    const k2 = await open(sdk, build);
    k1.start('work', {}, { id: 'w-1' });
    k2.start('work', {}, { id: 'w-2' });
    await until(() => entered === 2);
    expect(c.inFlight).toBe(2);
    expect(builds).toBeGreaterThanOrEqual(2); // (2026-07-28: one server per request)
    const t0 = performance.now();
    const result = await c.drain(5_000);
    const took = performance.now() - t0;
    expect(result).toEqual({ aborted: 2, pending: 0 });
    expect(cleaned).toBe(2); // drain waited for the async cleanups
    expect(took).toBeGreaterThanOrEqual(90);
    expect(reasons).toHaveLength(2);
    for (const r of reasons) expect(r).toBeInstanceOf(ShuttingDown);
    expect(c.inFlight).toBe(0);
    expect(c.draining).toBe(true);
    // new calls on either server: immediate SHUTTING_DOWN refusal, handler not run
    for (const k of [k1, k2]) {
      const r = await k.callTool('work');
      expect(refusalCode(r)).toBe(ErrorCode.SHUTTING_DOWN);
    }
    expect(entered).toBe(2);
    await pause(30);
    expect(k1.wire.responseTo('w-1')).toBeUndefined();
    expect(k2.wire.responseTo('w-2')).toBeUndefined();
    expect(await c.drain(100)).toEqual({ aborted: 0, pending: 0 }); // again: harmless
  });

  it('gives up after timeoutMs and reports what is still pending', async () => {
    const c = cancel();
    let entered = false;
    let done = false;
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c]);
      server.registerTool(
        'stuck',
        { inputSchema: {} },
        handler(async () => {
          entered = true;
          await pause(2_000); // ignores its signal
          done = true;
          return { content: [] };
        }),
      );
      return server;
    });
    kit.start('stuck', {}, { id: 'x-1' });
    await until(() => entered);
    const t0 = performance.now();
    const result = await c.drain(150);
    const took = performance.now() - t0;
    expect(result).toEqual({ aborted: 1, pending: 1 });
    expect(took).toBeLessThan(1_500);
    expect(done).toBe(false);
    await until(() => done, 5_000);
    await until(() => c.inFlight === 0, 2_000);
    await expect(c.drain(-1)).rejects.toThrow(TypeError);
  });

  it('waits for a generator handler abandoned at the abort until its code really stopped', async () => {
    const c = cancel();
    let entered = false;
    let finallyRan = false;
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c]);
      server.registerTool(
        'gen',
        { inputSchema: {} },
        handler(async function* () {
          entered = true;
          try {
            await pause(300); // ignores its signal
            yield progressEvent(1, 2);
            return { content: [] };
          } finally {
            finallyRan = true;
          }
        }),
      );
      return server;
    });
    kit.start('gen', {}, { id: 'g-1' });
    await until(() => entered);
    const result = await c.drain(5_000);
    expect(result).toEqual({ aborted: 1, pending: 0 });
    expect(finallyRan).toBe(true);
    expect(c.inFlight).toBe(0);
  });

  it('drain with nothing in flight resolves at once; prompts are refused with a JSON-RPC error carrying SHUTTING_DOWN', async () => {
    const c = cancel();
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [c]);
      server.registerPrompt('p', {}, async () => ({ messages: [] }));
      return server;
    });
    expect(await c.drain()).toEqual({ aborted: 0, pending: 0 });
    const err = await kit.client.getPrompt({ name: 'p' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ data: { code: 'SHUTTING_DOWN' } });
  });
});

describeEachSdk('composition', (sdk) => {
  it('one cancel() in a chain rules: a second instance passes through; works before other middlewares', async () => {
    const outer = cancel({ timeoutMs: 100 });
    const inner = cancel({ timeoutMs: 10_000 });
    const kit = await open(sdk, () => {
      const { server } = tetheredServer(sdk, [outer, inner]);
      server.registerTool(
        'slow',
        { inputSchema: {} },
        handler(async (_args: unknown, ctx) => {
          await sleep(1_000, ctx.signal);
          return { content: [] };
        }),
      );
      return server;
    });
    const r = await kit.callTool('slow');
    expect(refusalCode(r)).toBe('TIMEOUT');
    // The TIMEOUT answer goes out at the deadline, without waiting for the handler; the handler
    // honours its signal, so both instances see the call finish right after.
    await vi.waitFor(() => expect(outer.inFlight + inner.inFlight).toBe(0));
  });
});
