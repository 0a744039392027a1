import { currentCall, handler, tether, type CallContext, type Middleware, type OutboundEvent } from '@mcp-tether/core';
import { connectHttp, serveHttp, type HttpHarness, type TestClient } from '@mcp-tether/testing';
import { describeEachSdk, type MatrixClient, type MatrixServer, type SdkTarget } from '@mcp-tether/testing/matrix';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { progress, progressMiddleware, type ProgressOptions } from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (r: any) => r.content?.[0]?.text;
const OFF: ProgressOptions = { minIntervalMs: 0, minDelta: 0 };

let kit: MatrixClient | TestClient | undefined;
let harness: HttpHarness | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
  await harness?.close();
  harness = undefined;
});

/**
 * A factory for `sdk.connect`: a fresh tethered server of the target's SDK line with the progress
 * middleware (called once on legacy targets, once per HTTP request on v2-modern).
 */
function serve(
  sdk: SdkTarget,
  options: ProgressOptions | undefined,
  register: (s: MatrixServer) => void,
  extra: Middleware[] = [],
) {
  return () => {
    const s = tether(sdk.createServer({ name: 'progress-test', version: '1.0.0' }), [
      ...extra,
      progressMiddleware(options),
    ]);
    register(s);
    return s;
  };
}

/**
 * Outermost layer: records every notification on its way to core's sink, i.e. what the server
 * tried to put on the wire. On v2-modern a cancelled call's stream is closed, so the client's wire
 * log cannot show what the server still attempted; this can.
 */
function outbound(): Middleware & { sent: OutboundEvent[] } {
  const sent: OutboundEvent[] = [];
  return {
    name: 'outbound-spy',
    sent,
    onEvent(_ctx, event, next) {
      sent.push(event);
      return next(event);
    },
  };
}

/** The response message to a request id, by wire order. */
function responseSeq(k: MatrixClient | TestClient, id: string | number): number {
  const r = k.wire.responseTo(id);
  if (!r) throw new Error(`no response to ${id}\n${k.wire.transcript()}`);
  return r.seq;
}

function strictlyIncreasing(values: number[]): boolean {
  return values.every((v, i) => i === 0 || v > values[i - 1]!);
}

describe('progress(): the event factory', () => {
  it('percent form is percent of 100; explicit form keeps its unit; bad input is a TypeError', () => {
    expect(progress(30, 'rows loaded')).toMatchObject({
      type: 'progress',
      progress: 30,
      total: 100,
      message: 'rows loaded',
    });
    const e = progress({ progress: 420, total: 12_000 });
    expect(e).toMatchObject({ type: 'progress', progress: 420, total: 12_000 });
    expect('message' in e).toBe(false);
    expect('total' in progress({ progress: 3 })).toBe(false);
    expect(() => progress('50' as never)).toThrow(TypeError);
    expect(() => progress({ total: 3 } as never)).toThrow(/progress/);
  });

  it('options are validated', () => {
    expect(() => progressMiddleware({ minIntervalMs: -1 })).toThrow(RangeError);
    expect(() => progressMiddleware({ minIntervalMs: Number.NaN })).toThrow(RangeError);
    expect(() => progressMiddleware({ minDelta: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    expect(() => progressMiddleware({ minDelta: 'x' as never })).toThrow(RangeError);
    expect(() => progressMiddleware({ minIntervalMs: 0, minDelta: (t) => (t ?? 0) / 10 })).not.toThrow();
  });
});

describeEachSdk('progress on the wire', (sdk) => {
  it('a 100 000-yield tight loop: at most ~100 notifications, strictly increasing, last = final value, all before the response', async () => {
    const N = 100_000;
    kit = await sdk.connect(
      serve(sdk, undefined, (s) => {
        s.registerTool(
          'loop',
          { inputSchema: {} },
          handler(async function* () {
            for (let i = 1; i <= N; i++) yield progress({ progress: i, total: N, message: `item ${i}` });
            return { content: [{ type: 'text' as const, text: 'done' }] };
          }),
        );
      }),
    );
    const call = kit.start('loop', {}, { id: 'loop-1', progressToken: 'big' });
    const res = await call.response(60_000);
    expect(res.result?.content?.[0]?.text).toBe('done');
    const sent = kit.wire.progress('big');
    // First value at once; then each send rises by >= 1% of total (1 000): at most 1 + 99, plus the flush.
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(sent.length).toBeLessThanOrEqual(101);
    expect(strictlyIncreasing(sent.map((p) => p.progress))).toBe(true);
    expect(sent[0]!.progress).toBe(1);
    expect(sent.at(-1)).toMatchObject({ progress: N, total: N, message: `item ${N}` });
    expect(sent.every((p) => p.total === N && p.progress <= N)).toBe(true);
    const rseq = responseSeq(kit, 'loop-1');
    expect(sent.every((p) => p.seq < rseq)).toBe(true);
    expect(kit.wire.allProgress().length).toBe(sent.length);
  });

  it('0, 10, 10, 5, 20, 20.5, NaN, 30 with integer token 7 → exactly 0, 10, 20, 20.5, 30, token still the number 7', async () => {
    kit = await sdk.connect(
      serve(sdk, OFF, (s) => {
        s.registerTool(
          'seq',
          { inputSchema: {} },
          handler(async function* () {
            for (const v of [0, 10, 10, 5, 20, 20.5, Number.NaN, 30]) yield progress(v, `at ${v}`);
            return { content: [{ type: 'text' as const, text: 'ok' }] };
          }),
        );
      }),
    );
    await kit.callTool('seq', {}, { progressToken: 7 });
    const sent = kit.wire.progress(7);
    expect(sent.map((p) => p.progress)).toEqual([0, 10, 20, 20.5, 30]);
    expect(sent.map((p) => p.message)).toEqual(['at 0', 'at 10', 'at 20', 'at 20.5', 'at 30']);
    for (const p of sent) {
      expect(p.progressToken).toBe(7);
      expect(typeof p.progressToken).toBe('number');
      expect(p.total).toBe(100);
    }
    // Raw params on the wire: exactly these keys, nothing rewritten.
    const raw = kit.wire.notifications('notifications/progress').map((m) => m.message.params);
    expect(raw[3]).toEqual({ progressToken: 7, progress: 20.5, total: 100, message: 'at 20.5' });
  });

  it('Infinity, values above total and a non-finite total are dropped, not clamped', async () => {
    kit = await sdk.connect(
      serve(sdk, OFF, (s) => {
        s.registerTool(
          'bad',
          { inputSchema: {} },
          handler(async function* () {
            yield progress({ progress: 1, total: 10 });
            yield progress({ progress: Number.POSITIVE_INFINITY, total: 10 });
            yield progress({ progress: 11, total: 10 });
            yield progress({ progress: 2, total: Number.NaN });
            yield progress({ progress: 3, total: 10 });
            yield progress({ progress: 10, total: 10 });
            yield progress({ progress: 10.5, total: 10 });
            return { content: [] };
          }),
        );
      }),
    );
    await kit.callTool('bad', {}, { progressToken: 'x' });
    expect(kit.wire.progress('x').map((p) => p.progress)).toEqual([1, 3, 10]);
  });

  it('token 0 and a non-ASCII string token are echoed exactly', async () => {
    kit = await sdk.connect(
      serve(sdk, OFF, (s) => {
        s.registerTool(
          'two',
          { inputSchema: {} },
          handler(async function* () {
            yield progress(50);
            yield progress(100);
            return { content: [] };
          }),
        );
      }),
    );
    const weird = '進捗-✓-🚀-ñ';
    await kit.callTool('two', {}, { progressToken: 0 });
    await kit.callTool('two', {}, { progressToken: weird });
    const zero = kit.wire.progress(0);
    expect(zero.map((p) => p.progress)).toEqual([50, 100]);
    expect(zero.every((p) => p.progressToken === 0)).toBe(true);
    const uni = kit.wire.progress(weird);
    expect(uni.map((p) => p.progress)).toEqual([50, 100]);
    expect(kit.wire.allProgress().length).toBe(4);
  });

  it('no token: zero notifications, and both generator and ctx.progress handlers still work', async () => {
    kit = await sdk.connect(
      serve(sdk, OFF, (s) => {
        s.registerTool(
          'gen',
          { inputSchema: {} },
          handler(async function* () {
            for (let i = 0; i <= 100; i += 10) yield progress(i);
            return { content: [{ type: 'text' as const, text: 'gen ok' }] };
          }),
        );
        s.registerTool('plain', { inputSchema: {} }, async (_args: unknown, extra: unknown) => {
          const ctx = extra as CallContext;
          for (let i = 0; i <= 100; i += 10) await ctx.progress(i, 'step');
          await ctx.progress({ progress: 5, total: 5 });
          return { content: [{ type: 'text' as const, text: 'plain ok' }] };
        });
      }),
    );
    expect(text(await kit.callTool('gen'))).toBe('gen ok');
    expect(text(await kit.callTool('plain'))).toBe('plain ok');
    expect(kit.wire.notifications().length).toBe(0);
  });

  it('ctx.progress from a plain async handler', async () => {
    kit = await sdk.connect(
      serve(sdk, OFF, (s) => {
        s.registerTool(
          'plain',
          { inputSchema: { n: z.number() } },
          handler(async ({ n }: { n: number }, ctx) => {
            for (let i = 1; i <= n; i++) await ctx.progress({ progress: i, total: n, message: `file ${i}` });
            void ctx.progress(n); // 3 (percent of 100) is not above the 3 already sent: dropped
            return { content: [{ type: 'text' as const, text: String(n) }] };
          }),
        );
      }),
    );
    expect(text(await kit.callTool('plain', { n: 3 }, { progressToken: 'p' }))).toBe('3');
    expect(kit.wire.progress('p').map((p) => [p.progress, p.total, p.message])).toEqual([
      [1, 3, 'file 1'],
      [2, 3, 'file 2'],
      [3, 3, 'file 3'],
    ]);
  });

  it('ctx.progress read by an outer middleware before the progress layer ran: a function; its reports before that layer are dropped, later ones are sent', async () => {
    const early: Middleware = {
      name: 'early',
      async handle(ctx, next) {
        await ctx.progress(1, 'queued'); // before the progress layer: dropped, not thrown
        return next();
      },
    };
    kit = await sdk.connect(
      serve(
        sdk,
        OFF,
        (s) => {
          s.registerTool(
            'plain',
            { inputSchema: {} },
            handler(async (_a: unknown, ctx) => {
              await ctx.progress(50, 'half');
              return { content: [] };
            }),
          );
        },
        [early],
      ),
    );
    await kit.callTool('plain', {}, { progressToken: 'e' });
    expect(kit.wire.progress('e').map((p) => [p.progress, p.message])).toEqual([[50, 'half']]);
  });

  it('ctx.progress with a bad argument throws a TypeError in the handler only; the server goes on', async () => {
    kit = await sdk.connect(
      serve(sdk, undefined, (s) => {
        s.registerTool('oops', { inputSchema: {} }, async (_a: unknown, extra: unknown) => {
          await (extra as CallContext).progress('half' as never);
          return { content: [] };
        });
      }),
    );
    const r = await kit.callTool('oops', {}, { progressToken: 1 });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/TypeError|progress\(\) takes/);
    const r2 = await kit.callTool('oops', {});
    expect(r2.isError).toBe(true);
    await kit.ping();
  });

  it('two concurrent calls with tokens "a" and "b" never see each other\'s token', async () => {
    kit = await sdk.connect(
      serve(sdk, OFF, (s) => {
        s.registerTool(
          'work',
          { inputSchema: { who: z.string() } },
          handler(async function* ({ who }: { who: string }) {
            for (let i = 1; i <= 20; i++) {
              yield progress({ progress: i, total: 20, message: who });
              if (i % 3 === 0) await sleep(1);
            }
            return { content: [{ type: 'text' as const, text: who }] };
          }),
        );
      }),
    );
    const [ra, rb] = await Promise.all([
      kit.callTool('work', { who: 'a' }, { progressToken: 'a' }),
      kit.callTool('work', { who: 'b' }, { progressToken: 'b' }),
    ]);
    expect([text(ra), text(rb)]).toEqual(['a', 'b']);
    const all = kit.wire.allProgress();
    expect(all.length).toBe(40);
    for (const p of all) expect(p.message).toBe(p.progressToken);
    expect(kit.wire.progress('a').map((p) => p.progress)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(kit.wire.progress('b').map((p) => p.progress)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // they really interleaved
    const tokens = all.map((p) => p.progressToken).join('');
    expect(tokens).not.toBe('a'.repeat(20) + 'b'.repeat(20));
  });

  it('time throttle: a held-back value goes out once minIntervalMs passed, before the handler returns', async () => {
    let returnedAt = 0;
    kit = await sdk.connect(
      serve(sdk, { minIntervalMs: 100, minDelta: 0 }, (s) => {
        s.registerTool(
          'slow',
          { inputSchema: {} },
          handler(async function* () {
            yield progress(1, 'one');
            yield progress(2, 'two'); // held back: < 100 ms since "one"
            yield progress(3, 'three'); // replaces it
            await sleep(500);
            returnedAt = Date.now();
            return { content: [] };
          }),
        );
      }),
    );
    await kit.callTool('slow', {}, { progressToken: 's' });
    const sent = kit.wire.progress('s');
    expect(sent.map((p) => p.message)).toEqual(['one', 'three']);
    // Exact timing (>= minIntervalMs between sends) is checked under fake time in
    // throttle.property.test.ts; here, client-side receive times on a loaded machine only give order.
    expect(sent[1]!.at).toBeGreaterThanOrEqual(sent[0]!.at);
    // <=: on a loaded machine the 100 ms trailing timer and the 500 ms sleep can fire in one turn
    expect(sent[1]!.at).toBeLessThanOrEqual(returnedAt);
  });

  it('delta throttle: a value that rose less than minDelta waits for the flush before the result', async () => {
    kit = await sdk.connect(
      serve(sdk, { minIntervalMs: 0, minDelta: 10 }, (s) => {
        s.registerTool(
          'small',
          { inputSchema: {} },
          handler(async function* () {
            yield progress(1);
            yield progress(5); // +4 < 10: held
            await sleep(50); // no time-based rescue: the delta rule still holds it
            yield progress(8); // +7 < 10: held (replaces 5)
            yield progress(11); // +10: sent
            yield progress(12); // held, flushed at the end
            return { content: [{ type: 'text' as const, text: 'r' }] };
          }),
        );
      }),
    );
    const call = kit.start('small', {}, { id: 'd1', progressToken: 'd' });
    await call.response();
    expect(kit.wire.progress('d').map((p) => p.progress)).toEqual([1, 11, 12]);
    expect(kit.wire.progress('d').every((p) => p.seq < responseSeq(kit!, 'd1'))).toBe(true);
  });

  it('minDelta as a function of total', async () => {
    kit = await sdk.connect(
      serve(sdk, { minIntervalMs: 0, minDelta: (total) => (total === undefined ? 100 : total / 4) }, (s) => {
        s.registerTool(
          'f',
          { inputSchema: {} },
          handler(async function* () {
            for (let i = 1; i <= 8; i++) yield progress({ progress: i, total: 8 }); // delta 2
            for (let i = 9; i <= 400; i += 50) yield progress({ progress: i }); // delta 100, no total
            return { content: [] };
          }),
        );
      }),
    );
    await kit.callTool('f', {}, { progressToken: 'f' });
    expect(kit.wire.progress('f').map((p) => p.progress)).toEqual([1, 3, 5, 7, 109, 209, 309, 359]); // 8 was held back, then replaced by 9 (no total), 59, 109;
  });

  it('nothing after the response: late ctx.progress calls from a background task are not sent', async () => {
    let late: Promise<void> | undefined;
    const spy = outbound();
    kit = await sdk.connect(
      serve(
        sdk,
        OFF,
        (s) => {
          s.registerTool('leaky', { inputSchema: {} }, async (_a: unknown, extra: unknown) => {
            const ctx = extra as CallContext;
            await ctx.progress(10);
            late = (async () => {
              for (let i = 20; i <= 100; i += 10) {
                await sleep(5);
                await ctx.progress(i);
              }
            })();
            return { content: [] };
          });
        },
        [spy],
      ),
    );
    await kit.callTool('leaky', {}, { progressToken: 'L' });
    await late;
    expect(kit.wire.progress('L').map((p) => p.progress)).toEqual([10]);
    expect(spy.sent.length).toBe(1);
  });

  // On v2-modern the cancel closes the call's response stream (no reason is sent): the client's
  // wire can show nothing after it whatever the server does, so the outermost spy checks what the
  // server still tried to send.
  it('nothing after cancellation, even from a handler that ignores the signal; no response either', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let after: Promise<void> | undefined;
    const spy = outbound();
    kit = await sdk.connect(
      serve(
        sdk,
        { minIntervalMs: 50, minDelta: 0 },
        (s) => {
          s.registerTool('stubborn', { inputSchema: {} }, async (_a: unknown, extra: unknown) => {
            const ctx = extra as CallContext;
            await ctx.progress(10);
            await ctx.progress(20); // held back by the 50 ms rule when the cancel lands
            await gate;
            after = ctx.progress(90);
            await after;
            return { content: [] };
          });
        },
        [spy],
      ),
    );
    const call = kit.start('stubborn', {}, { id: 'c1', progressToken: 'c' });
    await kit.wire.waitFor((m) => m.message.params?.progressToken === 'c');
    await call.cancel('stop');
    const cancelSeq = kit.wire.messages.length;
    await sleep(120); // the held-back 20 would have gone out by now
    release();
    await after;
    await sleep(20);
    expect(kit.wire.progress('c').map((p) => p.progress)).toEqual([10]);
    expect(spy.sent.map((e) => (e.type === 'notification' ? e.notification.params?.progress : e.type))).toEqual([10]);
    expect(kit.wire.fromServer().filter((m) => m.seq >= cancelSeq)).toEqual([]);
    expect(kit.wire.responseTo('c1')).toBeUndefined();
  });

  it('generator handler cancelled mid-loop: no notification after the cancel', async () => {
    const spy = outbound();
    kit = await sdk.connect(
      serve(
        sdk,
        OFF,
        (s) => {
          s.registerTool(
            'gen',
            { inputSchema: {} },
            handler(async function* () {
              for (let i = 1; i <= 1_000; i++) {
                yield progress({ progress: i });
                await sleep(2);
              }
              return { content: [] };
            }),
          );
        },
        [spy],
      ),
    );
    const call = kit.start('gen', {}, { id: 'g1', progressToken: 'g' });
    await kit.wire.waitFor((m) => m.message.params?.progressToken === 'g' && m.message.params.progress >= 5);
    await call.cancel();
    const atCancel = spy.sent.length;
    await sleep(60);
    expect(spy.sent.length).toBeLessThanOrEqual(atCancel + 1); // one may already be in flight
    const n = spy.sent.length;
    await sleep(60);
    expect(spy.sent.length).toBe(n);
    expect(kit.wire.progress('g').length).toBeLessThanOrEqual(n);
    expect(kit.wire.responseTo('g1')).toBeUndefined();
  });

  // The kit's stateful Streamable HTTP harness (serveHttp) is built on the v1 SDK transport; the
  // v2 lines are covered in memory (legacy) and over 2026-07-28 HTTP (modern) below.
  it.runIf(sdk.name === 'v1')(
    'stateful Streamable HTTP: progress rides the POST stream of its call, never the GET stream',
    async () => {
      harness = await serveHttp(
        serve(sdk, OFF, (s) => {
          s.registerTool(
            'http',
            { inputSchema: { n: z.number() } },
            handler(async function* ({ n }: { n: number }) {
              for (let i = 1; i <= n; i++) {
                yield progress({ progress: i, total: n });
                await sleep(5);
              }
              return { content: [{ type: 'text' as const, text: `n=${n}` }] };
            }),
          );
        }),
        { stateful: true },
      );
      const http = await connectHttp(harness.url);
      kit = http;
      const a = http.start('http', { n: 5 }, { id: 'h1', progressToken: 'ha' });
      const b = http.start('http', { n: 4 }, { id: 'h2', progressToken: 'hb' });
      const [ra, rb] = await Promise.all([a.response(10_000), b.response(10_000)]);
      expect(ra.result.content[0].text).toBe('n=5');
      expect(rb.result.content[0].text).toBe('n=4');
      const progressMsgs = http.wire.notifications('notifications/progress');
      expect(progressMsgs.length).toBe(9);
      for (const m of progressMsgs) {
        const id = m.message.params.progressToken === 'ha' ? 'h1' : 'h2';
        expect(m.stream).toEqual({ kind: 'post', requestIds: [id] });
      }
      expect(http.wire.fromServer().filter((m) => m.stream?.kind === 'get')).toEqual([]);
      expect(http.wire.progress('ha').map((p) => p.progress)).toEqual([1, 2, 3, 4, 5]);
    },
  );

  // 2026-07-28 has no sessions and no standalone stream: each call's notifications can only ride
  // its own POST response stream. The v2 kit tags which HTTP exchange carried every message.
  it.runIf(sdk.era === 'modern')(
    '2026-07-28 Streamable HTTP: progress rides the POST stream of its own call, before its response',
    async () => {
      kit = await sdk.connect(
        serve(sdk, OFF, (s) => {
          s.registerTool(
            'http',
            { inputSchema: { n: z.number() } },
            handler(async function* ({ n }: { n: number }) {
              for (let i = 1; i <= n; i++) {
                yield progress({ progress: i, total: n });
                await sleep(5);
              }
              return { content: [{ type: 'text' as const, text: `n=${n}` }] };
            }),
          );
        }),
      );
      const a = kit.start('http', { n: 5 }, { id: 'h1', progressToken: 'ha' });
      const b = kit.start('http', { n: 4 }, { id: 'h2', progressToken: 'hb' });
      const [ra, rb] = await Promise.all([a.response(10_000), b.response(10_000)]);
      expect(ra.result.content[0].text).toBe('n=5');
      expect(rb.result.content[0].text).toBe('n=4');
      const progressMsgs = kit.wire.notifications('notifications/progress');
      expect(progressMsgs.length).toBe(9);
      for (const [id, token] of [
        ['h1', 'ha'],
        ['h2', 'hb'],
      ] as const) {
        const onStream = kit.wire.forRequest(id);
        expect(
          onStream.every(
            (m) => m.stream?.kind === 'post' && m.stream.requestIds.length === 1 && m.stream.requestIds[0] === id,
          ),
        ).toBe(true);
        const mine = progressMsgs.filter((m) => m.message.params.progressToken === token);
        expect(mine.every((m) => onStream.includes(m))).toBe(true);
        expect(mine.every((m) => m.seq < responseSeq(kit!, id))).toBe(true);
      }
      // every notification rode a call's POST stream (only the client's opening server/discover got a plain JSON reply)
      expect(kit.wire.notifications().filter((m) => m.stream?.kind !== 'post')).toEqual([]);
      expect(kit.wire.progress('ha').map((p) => p.progress)).toEqual([1, 2, 3, 4, 5]);
      expect(kit.wire.progress('hb').map((p) => p.progress)).toEqual([1, 2, 3, 4]);
    },
  );

  it('works for prompts too, through currentCall() (with async context on)', async () => {
    let seen: CallContext | undefined;
    const asks: Middleware = { name: 'asks-for-async-context', asyncContext: true };
    kit = await sdk.connect(
      serve(
        sdk,
        OFF,
        (s) => {
          s.registerPrompt('p', {}, async () => {
            seen = currentCall();
            await seen!.progress(50, 'half');
            return { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] };
          });
        },
        [asks],
      ),
    );
    await kit.client.getPrompt({ name: 'p', _meta: { progressToken: 'pr' } });
    expect(seen?.method).toBe('prompts/get');
    expect(kit.wire.progress('pr').map((p) => p.message)).toEqual(['half']);
  });
});
