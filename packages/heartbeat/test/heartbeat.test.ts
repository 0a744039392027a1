import { handler, progressEvent, tether, type CallContext, type Middleware } from '@mcp-tether/core';
import { describeEachSdk, type MatrixClient, type MatrixServer, type SdkTarget } from '@mcp-tether/testing/matrix';
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { z } from 'zod';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { heartbeat, heartbeatValue, type HeartbeatOptions } from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (r: any) => r.content?.[0]?.text;

/** Turns progress events into notifications with no throttle (the real one lives in @mcp-tether/progress, which this package does not depend on). */
const progressToWire: Middleware = {
  name: 'progress-to-wire',
  onEvent(_ctx, event, next) {
    if (event.type !== 'progress') return next(event);
    const params: Record<string, unknown> = { progress: event.progress };
    if (event.total !== undefined) params.total = event.total;
    if (event.message !== undefined) params.message = event.message;
    return next({ type: 'notification', notification: { method: 'notifications/progress', params } });
  },
};

let kit: MatrixClient | undefined;
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  await kit?.close();
  kit = undefined;
});

/** A factory for `sdk.connect`: called once on legacy targets, once per HTTP request on v2-modern (the middleware instances are shared). */
function serve(sdk: SdkTarget, middlewares: Middleware[], register: (s: MatrixServer) => void) {
  return () => {
    const s = tether(sdk.createServer({ name: 'hb', version: '1' }), middlewares);
    register(s);
    return s;
  };
}

/** The client's own request timeout error, per SDK line. */
function expectClientTimeout(sdk: SdkTarget, err: unknown) {
  if (sdk.sdk === 'v1') {
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(ErrorCode.RequestTimeout);
  } else {
    expect(err).toBeInstanceOf(SdkError);
    expect((err as SdkError).code).toBe(SdkErrorCode.RequestTimeout);
  }
}

function strictlyIncreasing(values: number[]): boolean {
  return values.every((v, i) => i === 0 || v > values[i - 1]!);
}

describe('options and heartbeatValue()', () => {
  it('rejects bad options with a RangeError', () => {
    expect(() => heartbeat({ silenceMs: 0 })).toThrow(RangeError);
    expect(() => heartbeat({ silenceMs: Number.NaN })).toThrow(RangeError);
    expect(() => heartbeat({ sessionPing: { intervalMs: 10, timeoutMs: 10, maxFailures: 0 } })).toThrow(/maxFailures/);
    expect(() => heartbeat({ sessionPing: { intervalMs: -1, timeoutMs: 10, maxFailures: 1 } })).toThrow(/intervalMs/);
    expect(() => heartbeat({ sessionPing: null as never })).toThrow(RangeError);
    expect(() => heartbeat({ sweepBudgetMs: 0 })).toThrow(/sweepBudgetMs/);
    expect(() => heartbeat({ sweepBudgetMs: Infinity })).toThrow(/sweepBudgetMs/);
    expect(heartbeat().name).toBe('heartbeat');
  });

  it('heartbeatValue: 0 first; strictly above the last value; never above total; nothing at total', () => {
    expect(heartbeatValue(undefined)).toBe(0);
    expect(heartbeatValue({ progress: 100, total: 100 })).toBeUndefined();
    expect(heartbeatValue({ progress: 40, total: 100 })).toBeGreaterThan(40);
    expect(heartbeatValue({ progress: 40, total: 100 })).toBeLessThan(40.1);
    expect(heartbeatValue({ progress: 1e300 })).toBeGreaterThan(1e300);
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e308, max: 1e308 }),
        fc.option(fc.double({ noNaN: true, noDefaultInfinity: true, min: 0, max: 1e308 }), { nil: undefined }),
        (progress, extra) => {
          const total = extra === undefined ? undefined : progress + extra;
          if (total !== undefined && !Number.isFinite(total)) return;
          const v = heartbeatValue(total === undefined ? { progress } : { progress, total });
          if (total !== undefined && progress >= total) {
            expect(v).toBeUndefined();
          } else {
            expect(v).toBeDefined();
            expect(v!).toBeGreaterThan(progress);
            if (total !== undefined) expect(v!).toBeLessThanOrEqual(total);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describeEachSdk('progress-silence watchdog (real time, real SDK client)', (sdk) => {
  it('a tool silent for 1.5 s, silenceMs 200, client timeout 600 ms + resetTimeoutOnProgress: succeeds; without a token the same client times out', async () => {
    const hb = heartbeat({ silenceMs: 200 });
    kit = await sdk.connect(
      serve(sdk, [hb, progressToWire], (server) => {
        server.registerTool(
          'quiet',
          { inputSchema: {} },
          handler(async function* () {
            yield progressEvent(10, 100, 'rows loaded');
            await sleep(1_500);
            return { content: [{ type: 'text' as const, text: 'finished' }] };
          }),
        );
      }),
    );
    const seen: Array<{ progress: number; total?: number; message?: string }> = [];
    const r = await kit.callTool(
      'quiet',
      {},
      { timeout: 600, resetTimeoutOnProgress: true, onprogress: (p) => seen.push(p) },
    );
    expect(text(r)).toBe('finished');
    const wire = kit.wire.allProgress();
    expect(wire.length).toBeGreaterThanOrEqual(3); // 10, then heartbeats every ~200-250 ms
    expect(seen.length).toBe(wire.length);
    expect(wire[0]).toMatchObject({ progress: 10, total: 100, message: 'rows loaded' });
    const beats = wire.slice(1);
    expect(strictlyIncreasing(wire.map((p) => p.progress))).toBe(true);
    for (const b of beats) {
      expect(b.total).toBe(100);
      expect(b.progress).toBeGreaterThan(10);
      expect(b.progress).toBeLessThan(11); // a tiny step, not fake progress
      expect(b.message).toMatch(/^still working \(\d+ s elapsed; last: rows loaded\)$/);
    }
    // the heartbeats come from the watchdog, not the handler: all after the first value, before the response
    const responseSeq = kit.wire.fromServer().find((m) => m.message.result?.content)!.seq;
    expect(wire.every((p) => p.seq < responseSeq)).toBe(true);

    // Same client, same tool, no token: nothing extends the client's 600 ms timeout.
    const err = await kit.callTool('quiet', {}, { timeout: 600, resetTimeoutOnProgress: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expectClientTimeout(sdk, err);
    expect(kit.wire.allProgress().length).toBe(wire.length);
  });

  it('order-independent: heartbeat inside the progress layer works the same', async () => {
    kit = await sdk.connect(
      serve(sdk, [progressToWire, heartbeat({ silenceMs: 100 })], (server) => {
        server.registerTool(
          'quiet',
          { inputSchema: {} },
          handler(async function* () {
            yield progressEvent(3, 10, 'stage one');
            await sleep(400);
            yield progressEvent(4, 10, 'stage two'); // still above every heartbeat (they take 1/1000 of the room)
            await sleep(400);
            return { content: [] };
          }),
        );
      }),
    );
    await kit.callTool('quiet', {}, { progressToken: 'o' });
    const wire = kit.wire.progress('o');
    expect(strictlyIncreasing(wire.map((p) => p.progress))).toBe(true);
    const i4 = wire.findIndex((p) => p.message === 'stage two');
    expect(i4).toBeGreaterThan(1);
    expect(wire[i4]!.progress).toBe(4);
    expect(
      wire.slice(1, i4).every((p) => /last: stage one/.test(p.message ?? '') && p.progress > 3 && p.progress < 4),
    ).toBe(true);
    expect(wire.slice(i4 + 1).length).toBeGreaterThanOrEqual(1);
    expect(
      wire.slice(i4 + 1).every((p) => /last: stage two/.test(p.message ?? '') && p.progress > 4 && p.progress <= 10),
    ).toBe(true);
  });
});

describeEachSdk('watchdog with fake time', (sdk) => {
  const fake = () => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });

  function gatedServer(options: HeartbeatOptions, extra: Middleware[] = []) {
    const hb = heartbeat(options);
    const gates: Array<() => void> = [];
    let started = 0;
    const server = serve(sdk, [hb, progressToWire, ...extra], (s) => {
      s.registerTool('gate', { inputSchema: {} }, async () => {
        started++;
        // the handler ignores ctx.signal on purpose
        await new Promise<void>((resolve) => gates.push(resolve));
        return { content: [{ type: 'text' as const, text: 'released' }] };
      });
    });
    return { hb, server, gates, started: () => started };
  }

  async function until(cond: () => boolean) {
    // Bounded by a generous 5 s of real time: on a loaded machine 50 HTTP streams take a while.
    const end = performance.now() + 5_000; // real time (Date is faked here)
    while (!cond() && performance.now() < end) await sleep(1);
    if (!cond()) throw new Error(`condition not met: ${cond.toString()}`);
  }

  it('no value yet: the first heartbeat is 0 with no total; then strictly increasing; stops after the response; timer gone', async () => {
    fake();
    const g = gatedServer({ silenceMs: 1_000 });
    kit = await sdk.connect(g.server);
    const call = kit.start('gate', {}, { id: 'g1', progressToken: 'g' });
    await until(() => g.started() === 1);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(900);
    await sleep(5);
    expect(kit.wire.progress('g')).toEqual([]);
    // A tick at a time, with real turns between them (a heartbeat still on its way holds the next back).
    for (let t = 0; t < 12; t++) {
      vi.advanceTimersByTime(250);
      await sleep(2);
    }
    await until(() => kit!.wire.progress('g').length >= 3);
    const beats = kit.wire.progress('g');
    expect(beats[0]).toMatchObject({ progress: 0, message: 'still working (1 s elapsed)' });
    expect('total' in beats[0]!).toBe(false);
    expect(strictlyIncreasing(beats.map((b) => b.progress))).toBe(true);
    g.gates.shift()!();
    await call.response();
    const n = kit.wire.progress('g').length;
    expect(vi.getTimerCount()).toBe(0);
    expect(g.hb.watching).toBe(0);
    vi.advanceTimersByTime(10_000);
    await sleep(10);
    expect(kit.wire.progress('g').length).toBe(n);
    const rseq = kit.wire.responseTo('g1')!.seq;
    expect(kit.wire.progress('g').every((b) => b.seq < rseq)).toBe(true);
  });

  it('stops at abort even though the handler ignores the signal; no response, no timer', async () => {
    fake();
    const g = gatedServer({ silenceMs: 1_000 });
    kit = await sdk.connect(g.server);
    const call = kit.start('gate', {}, { id: 'a1', progressToken: 'a' });
    await until(() => g.started() === 1);
    vi.advanceTimersByTime(1_500);
    await until(() => kit!.wire.progress('a').length === 1);
    await call.cancel('user stopped');
    await until(() => g.hb.watching === 0);
    expect(vi.getTimerCount()).toBe(0);
    const n = kit.wire.progress('a').length;
    vi.advanceTimersByTime(10_000);
    await sleep(10);
    expect(kit.wire.progress('a').length).toBe(n);
    g.gates.shift()!(); // the handler finally returns: still nothing goes out
    await sleep(10);
    expect(kit.wire.responseTo('a1')).toBeUndefined();
    expect(kit.wire.progress('a').length).toBe(n);
  });

  it('one timer for 50 concurrent calls, none for calls without a token, none when idle', async () => {
    fake();
    const g = gatedServer({ silenceMs: 1_000 });
    kit = await sdk.connect(g.server);
    expect(vi.getTimerCount()).toBe(0);
    const plain = kit.start('gate', {}, { id: 'plain' });
    await until(() => g.started() === 1);
    expect(vi.getTimerCount()).toBe(0); // no token: not watched
    const calls = Array.from({ length: 50 }, (_, i) => kit!.start('gate', {}, { id: `c${i}`, progressToken: `t${i}` }));
    await until(() => g.started() === 51);
    expect(g.hb.watching).toBe(50);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1_250);
    await until(() => kit!.wire.allProgress().length === 50);
    // each call got exactly its own heartbeat, with its own token
    for (let i = 0; i < 50; i++) expect(kit.wire.progress(`t${i}`).length).toBe(1);
    while (g.gates.length) g.gates.shift()!();
    await Promise.all([plain, ...calls].map((c) => c.response()));
    expect(g.hb.watching).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a sweep split over many event-loop turns (tiny sweepBudgetMs) still reaches each of 200 silent calls', async () => {
    fake();
    const immediates = vi.spyOn(globalThis, 'setImmediate');
    const g = gatedServer({ silenceMs: 1_000, sweepBudgetMs: 1e-9 });
    kit = await sdk.connect(g.server);
    const calls = Array.from({ length: 200 }, (_, i) =>
      kit!.start('gate', {}, { id: `s${i}`, progressToken: `u${i}` }),
    );
    await until(() => g.started() === 200);
    expect(vi.getTimerCount()).toBe(1);
    const before = immediates.mock.calls.length;
    // One tick (250 ms of fake time) at a time, with real turns in between for the sweep's
    // setImmediate continuations, until every call got its heartbeat (bounded).
    const beaten = () =>
      Array.from({ length: 200 }, (_, i) => kit!.wire.progress(`u${i}`).length).filter((n) => n > 0).length;
    for (let t = 0; t < 80 && beaten() < 200; t++) {
      vi.advanceTimersByTime(250);
      await sleep(20);
    }
    expect(beaten()).toBe(200);
    // 200 watches, a turn given every 32 of them: sweeps ran over at least 6 turns
    expect(immediates.mock.calls.length - before).toBeGreaterThanOrEqual(6);
    for (let i = 0; i < 200; i++)
      expect(strictlyIncreasing(kit.wire.progress(`u${i}`).map((b) => b.progress))).toBe(true);
    while (g.gates.length) g.gates.shift()!();
    await Promise.all(calls.map((c) => c.response()));
    expect(g.hb.watching).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a tick that comes while a split sweep runs is not lost: 64 calls, tiny sweepBudgetMs, one jump of fake time, exactly one heartbeat each', async () => {
    fake();
    const g = gatedServer({ silenceMs: 1_000, sweepBudgetMs: 1e-9 });
    kit = await sdk.connect(g.server);
    const calls = Array.from({ length: 64 }, (_, i) => kit!.start('gate', {}, { id: `j${i}`, progressToken: `v${i}` }));
    await until(() => g.started() === 64);
    // The sweep started at 250 ms yields after 32 calls (not due then); the ticks up to 1 250 ms come
    // while it waits for its next turn: it must look at the first 32 again once it is done.
    vi.advanceTimersByTime(1_250);
    await until(() => kit!.wire.allProgress().length === 64);
    await sleep(20);
    for (let i = 0; i < 64; i++) expect(kit.wire.progress(`v${i}`).length).toBe(1);
    while (g.gates.length) g.gates.shift()!();
    await Promise.all(calls.map((c) => c.response()));
    expect(g.hb.watching).toBe(0);
  });

  it("backpressure: while a call's heartbeat has not been written, it gets no other; once written, the next comes a silence later", async () => {
    fake();
    // An outer layer that holds heartbeats back, as a slow client's transport would.
    const held: Array<() => void> = [];
    let seen = 0;
    const slowWire: Middleware = {
      name: 'slow-wire',
      onEvent(_ctx, event, next) {
        if (event.type !== 'notification' || event.notification.method !== 'notifications/progress') return next(event);
        seen++;
        return new Promise<void>((resolve) => held.push(() => resolve(next(event))));
      },
    };
    const hb = heartbeat({ silenceMs: 1_000 });
    const gates: Array<() => void> = [];
    kit = await sdk.connect(
      serve(sdk, [slowWire, hb, progressToWire], (s) => {
        s.registerTool('gate', { inputSchema: {} }, async () => {
          await new Promise<void>((resolve) => gates.push(resolve));
          return { content: [] };
        });
      }),
    );
    const call = kit.start('gate', {}, { id: 'bp1', progressToken: 'bp' });
    await until(() => gates.length === 1);
    vi.advanceTimersByTime(1_250);
    await until(() => seen === 1);
    // Ten more silences while the first is held: no second heartbeat piles up behind it.
    for (let i = 0; i < 40; i++) {
      vi.advanceTimersByTime(250);
      await sleep(1);
    }
    expect(seen).toBe(1);
    expect(kit.wire.progress('bp')).toEqual([]);
    held.shift()!();
    await until(() => kit!.wire.progress('bp').length === 1);
    vi.advanceTimersByTime(750);
    await sleep(5);
    expect(seen).toBe(1); // written just now: the next one is due a full silence later
    vi.advanceTimersByTime(500);
    await until(() => seen === 2);
    held.shift()!();
    await until(() => kit!.wire.progress('bp').length === 2);
    expect(strictlyIncreasing(kit.wire.progress('bp').map((b) => b.progress))).toBe(true);
    gates.shift()!();
    await call.response();
    expect(hb.watching).toBe(0);
  });

  it('a call already at total gets no heartbeat (nothing honest to send); a value below total gets steps within total', async () => {
    fake();
    const hb = heartbeat({ silenceMs: 1_000 });
    const gates: Array<() => void> = [];
    kit = await sdk.connect(
      serve(sdk, [hb, progressToWire], (server) => {
        server.registerTool(
          'report',
          { inputSchema: { p: z.number() } },
          async ({ p }: { p: number }, extra: unknown) => {
            const ctx = extra as CallContext;
            await ctx.emit(progressEvent(p, 10, `p=${p}`));
            await new Promise<void>((r) => gates.push(r));
            return { content: [] };
          },
        );
      }),
    );
    const full = kit.start('report', { p: 10 }, { id: 'full', progressToken: 'full' });
    const part = kit.start('report', { p: 9.99 }, { id: 'part', progressToken: 'part' });
    await until(() => gates.length === 2);
    for (let i = 0; i < 6; i++) {
      vi.advanceTimersByTime(1_250);
      await sleep(2);
    }
    expect(kit.wire.progress('full').map((p) => p.progress)).toEqual([10]);
    const partWire = kit.wire.progress('part');
    expect(partWire.length).toBeGreaterThanOrEqual(5);
    expect(strictlyIncreasing(partWire.map((p) => p.progress))).toBe(true);
    expect(partWire.every((p) => p.total === 10 && p.progress <= 10)).toBe(true);
    while (gates.length) gates.shift()!();
    await Promise.all([full.response(), part.response()]);
  });

  it('custom message', async () => {
    fake();
    const g = gatedServer({
      silenceMs: 1_000,
      message: (i) => `${i.name}: alive after ${i.elapsedMs} ms, silent ${i.silentMs} ms`,
    });
    kit = await sdk.connect(g.server);
    const call = kit.start('gate', {}, { id: 'm1', progressToken: 'm' });
    await until(() => g.started() === 1);
    vi.advanceTimersByTime(1_000);
    await until(() => kit!.wire.progress('m').length === 1);
    expect(kit.wire.progress('m')[0]!.message).toBe('gate: alive after 1000 ms, silent 1000 ms');
    g.gates.shift()!();
    await call.response();
  });

  it('a custom message that throws falls back to the default one; the heartbeat still goes out', async () => {
    fake();
    const g = gatedServer({
      silenceMs: 1_000,
      message: () => {
        throw new Error('bad template');
      },
    });
    kit = await sdk.connect(g.server);
    const call = kit.start('gate', {}, { id: 'm2', progressToken: 'm2' });
    await until(() => g.started() === 1);
    vi.advanceTimersByTime(1_000);
    await until(() => kit!.wire.progress('m2').length === 1);
    expect(kit.wire.progress('m2')[0]!.message).toBe('still working (1 s elapsed)');
    g.gates.shift()!();
    await call.response();
  });
});

describeEachSdk("the shared timer is unref'd (the process can exit)", (sdk) => {
  it('one setInterval for concurrent calls, not holding the event loop; cleared when the last call leaves', async () => {
    const setSpy = vi.spyOn(globalThis, 'setInterval');
    const clearSpy = vi.spyOn(globalThis, 'clearInterval');
    const hb = heartbeat({ silenceMs: 60_000 });
    const gates: Array<() => void> = [];
    kit = await sdk.connect(
      serve(sdk, [hb], (server) => {
        server.registerTool('gate', { inputSchema: {} }, async () => {
          await new Promise<void>((r) => gates.push(r));
          return { content: [] };
        });
      }),
    );
    const before = setSpy.mock.results.length;
    const calls = Array.from({ length: 10 }, (_, i) => kit!.start('gate', {}, { id: `u${i}`, progressToken: i }));
    for (let i = 0; i < 500 && gates.length < 10; i++) await sleep(1);
    const ours = setSpy.mock.results.slice(before).map((r) => r.value as NodeJS.Timeout);
    expect(ours.length).toBe(1);
    expect(ours[0]!.hasRef()).toBe(false);
    while (gates.length) gates.shift()!();
    await Promise.all(calls.map((c) => c.response()));
    expect(clearSpy.mock.calls.some((c) => c[0] === ours[0])).toBe(true);
  });
});
