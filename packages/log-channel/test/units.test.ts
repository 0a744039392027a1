import { handler, tether } from '@mcp-tether/core';
import { connect } from '@mcp-tether/testing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TokenBucket } from '../src/bucket.js';
import { toJson } from '../src/json.js';
import { CHANNEL_LOGGER, SUMMARY_INTERVAL_MS, logChannel } from '../src/index.js';

describe('TokenBucket (property)', () => {
  it('never admits more than burst + perSecond × elapsed', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.double({ min: 0.1, max: 500, noNaN: true }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 50 })), { maxLength: 60 }),
        (burst, perSecond, steps) => {
          let now = 0;
          const bucket = new TokenBucket(burst, perSecond, () => now);
          let taken = 0;
          for (const [dt, attempts] of steps) {
            now += dt;
            for (let i = 0; i < attempts; i++) if (bucket.take()) taken++;
          }
          expect(taken).toBeLessThanOrEqual(burst + (perSecond * now) / 1000 + 1e-9);
        },
      ),
    );
  });

  it('msUntilToken is 0 exactly when take() succeeds, and waiting that long yields a token', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0.5, max: 100, noNaN: true }),
        fc.integer({ min: 0, max: 100 }),
        (burst, perSecond, drain) => {
          let now = 0;
          const bucket = new TokenBucket(burst, perSecond, () => now);
          for (let i = 0; i < drain; i++) bucket.take();
          const wait = bucket.msUntilToken();
          if (wait === 0) expect(bucket.take()).toBe(true);
          else {
            expect(bucket.take()).toBe(false);
            now += wait;
            expect(bucket.take()).toBe(true);
          }
        },
      ),
    );
  });
});

describe('toJson (property)', () => {
  it('any value becomes JSON that survives a stringify/parse round trip unchanged', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withNullPrototype: true,
          withSparseArray: true,
          withTypedArray: true,
        }),
        (v) => {
          const j = toJson(v);
          expect(JSON.parse(JSON.stringify(j))).toEqual(j);
        },
      ),
    );
  });

  it('handles circular references, errors and depth', () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    const shared = { s: 1 };
    expect(toJson(a)).toEqual({ x: 1, self: '[Circular]' });
    expect(toJson({ p: shared, q: shared })).toEqual({ p: { s: 1 }, q: { s: 1 } }); // repeated, not circular
    expect(toJson(new TypeError('bad'))).toEqual({ name: 'TypeError', message: 'bad' });
    expect(toJson(undefined)).toBe(null);
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(JSON.stringify(toJson(deep))).toContain('[Depth]');
  });
});

describe('mid-call summary (fake time, real wire)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a long call that stops flooding gets its summary once the bucket allows, not only at the end', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const server = tether(new McpServer({ name: 't', version: '1' }), [
      logChannel({ rateLimit: { burst: 5, perSecond: 2 } }),
    ]);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let flooded = false;
    server.registerTool(
      'long',
      { inputSchema: {} },
      handler(async (_a, ctx) => {
        for (let i = 0; i < 50; i++) ctx.log.info({ i });
        flooded = true;
        await gate;
        ctx.log.info('after the gate');
        return { content: [] };
      }),
    );
    const kit = await connect(server);
    try {
      const done = kit.callTool('long', {});
      while (!flooded) await vi.advanceTimersByTimeAsync(1);
      const summaryArrived = () =>
        kit.wire.notifications('notifications/message').some((m) => m.message.params.logger === CHANNEL_LOGGER);
      await vi.advanceTimersByTimeAsync(SUMMARY_INTERVAL_MS - 50);
      expect(summaryArrived()).toBe(false); // not before the summary interval
      await vi.advanceTimersByTimeAsync(100);
      expect(summaryArrived()).toBe(true);
      open();
      await done;
      const params = kit.wire.notifications('notifications/message').map((m) => m.message.params);
      const lines = params.filter((p) => p.logger === undefined);
      const summaries = params.filter((p) => p.logger === CHANNEL_LOGGER);
      expect(summaries).toHaveLength(1); // the end of the call had nothing more to report
      expect(lines.map((p) => p.data)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }, { i: 3 }, { i: 4 }, 'after the gate']);
      expect(summaries[0].data).toEqual({ dropped: 45 });
    } finally {
      await kit.close();
    }
  });

  it('a sustained flood gets about one summary per second, never starved by the lines, within the budget', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const burst = 5;
    const perSecond = 4;
    const server = tether(new McpServer({ name: 't', version: '1' }), [
      logChannel({ rateLimit: { burst, perSecond } }),
    ]);
    const N = 1_000; // one line every 5 ms for 5 s
    let finished = false;
    server.registerTool(
      'steady',
      { inputSchema: {} },
      handler(async (_a, ctx) => {
        for (let i = 0; i < N; i++) {
          ctx.log.info({ i });
          await new Promise((r) => setTimeout(r, 5));
        }
        finished = true;
        return { content: [] };
      }),
    );
    const kit = await connect(server);
    try {
      const t0 = Date.now();
      const done = kit.callTool('steady', {});
      while (!finished) await vi.advanceTimersByTimeAsync(50);
      await done;
      const elapsed = Date.now() - t0;
      const params = kit.wire.notifications('notifications/message').map((m) => m.message.params);
      const lines = params.filter((p) => p.logger === undefined);
      const summaries = params.filter((p) => p.logger === CHANNEL_LOGGER);
      // Everything but the final summary spent a token.
      expect(lines.length + summaries.length - 1).toBeLessThanOrEqual(burst + (perSecond * elapsed) / 1000);
      // Mid-call summaries at most once per second, and they do come (not starved by the lines).
      expect(summaries.length).toBeGreaterThanOrEqual(Math.floor(elapsed / 1000) - 1);
      expect(summaries.length).toBeLessThanOrEqual(Math.ceil(elapsed / 1000) + 1);
      expect(lines.length).toBeGreaterThan(burst); // lines still get most tokens
      expect(lines.length + summaries.reduce((n, p) => n + p.data.dropped, 0)).toBe(N);
    } finally {
      await kit.close();
    }
  });
});
