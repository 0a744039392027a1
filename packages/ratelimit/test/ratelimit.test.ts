import { ErrorCode, handler, JsonRpcErrorCode, diagnostics, type RateLimitMessage } from '@mcp-tether/core';
import { firstText } from '@mcp-tether/testing';
import {
  describeEachSdk,
  tetheredServer,
  type MatrixClient,
  type MatrixConnectOptions,
  type SdkTarget,
} from '@mcp-tether/testing/matrix';
import { afterEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { type RateLimitMiddleware, type RateLimitStore, rateLimit } from '../src/index.js';

const kits: MatrixClient[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const k of kits.splice(0)) await k.close().catch(() => {});
});

/** A real client of the target's SDK line against servers that share `limiter` (every session, every modern request). */
async function open(sdk: SdkTarget, limiter: RateLimitMiddleware, ran: string[], options: MatrixConnectOptions = {}) {
  const errors: unknown[] = [];
  const kit = await sdk.connect(() => {
    const { server } = tetheredServer(sdk, [limiter], errors);
    for (const name of ['search', 'fetch'])
      server.registerTool(
        name,
        { inputSchema: { q: z.string() } },
        handler(async (args: { q: string }) => {
          ran.push(`${name}:${args.q}`);
          return { content: [{ type: 'text' as const, text: `${name} ${args.q}` }] };
        }),
      );
    return server;
  }, options);
  kits.push(kit);
  return { kit, errors };
}

let seq = 0;
/** A raw tools/call; its response (result or JSON-RPC error) as the wire carried it. */
async function call(kit: MatrixClient, name: string, q: string, meta?: Record<string, unknown>) {
  return kit.start(name, { q }, { id: `c${++seq}`, ...(meta ? { meta } : {}) }).response(30_000);
}

describeEachSdk('rateLimit on the wire', (sdk) => {
  it('per tool: a burst passes, the next call gets -32029 RATE_LIMITED with retryAfterMs/Seconds and never reaches the handler; a refill lets one more through', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const limiter = rateLimit({ perTool: { burst: 3, perSecond: 0.5 } });
    const ran: string[] = [];
    const { kit, errors } = await open(sdk, limiter, ran);
    for (const q of ['1', '2', '3']) expect(firstText((await call(kit, 'search', q)).result)).toBe(`search ${q}`);
    const refused = await call(kit, 'search', '4');
    expect(refused.result).toBeUndefined();
    expect(refused.error).toMatchObject({
      code: JsonRpcErrorCode.RateLimited,
      data: {
        code: ErrorCode.RATE_LIMITED,
        scope: 'tool',
        subject: 'search',
        retryAfterMs: 2_000,
        retryAfterSeconds: 2,
        burst: 3,
        perSecond: 0.5,
      },
    });
    expect(refused.error.message).toMatch(/retry after 2 s/);
    // another tool has its own bucket
    expect(firstText((await call(kit, 'fetch', 'a')).result)).toBe('fetch a');
    vi.advanceTimersByTime(2_000);
    expect(firstText((await call(kit, 'search', '5')).result)).toBe('search 5');
    expect((await call(kit, 'search', '6')).error?.code).toBe(JsonRpcErrorCode.RateLimited);
    expect(ran).toEqual(['search:1', 'search:2', 'search:3', 'fetch:a', 'search:5']);
    expect(limiter.stats()).toMatchObject({ allowed: 5, refused: { tool: 2, client: 0, method: 0 } });
    // the SDK client sees the same refusal as an error with the code and data
    await expect(kit.callTool('search', { q: '7' })).rejects.toMatchObject({
      code: JsonRpcErrorCode.RateLimited,
      data: { code: 'RATE_LIMITED' },
    });
    expect(errors).toEqual([]);
  });

  it('per client: one client that exhausts its bucket leaves another client served; refusals are published on tether:ratelimit', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    // the client key from _meta, so that the test names its clients on every target (the default
    // key is ctx.clientKey / principal / session: see the next test)
    const limiter = rateLimit({
      perClient: { burst: 2, perSecond: 1 },
      clientKey: (ctx) => String(ctx.meta.client),
    });
    const ran: string[] = [];
    const { kit } = await open(sdk, limiter, ran);
    const seen: RateLimitMessage[] = [];
    const listener = (m: RateLimitMessage) => seen.push(m);
    diagnostics.rateLimit.subscribe(listener);
    try {
      expect((await call(kit, 'search', 'a1', { client: 'attacker' })).result).toBeDefined();
      expect((await call(kit, 'fetch', 'a2', { client: 'attacker' })).result).toBeDefined();
      for (let i = 0; i < 5; i++) {
        const r = await call(kit, 'search', `x${i}`, { client: 'attacker' });
        expect(r.error).toMatchObject({ code: -32029, data: { scope: 'client', retryAfterMs: 1_000 - 0 } });
      }
      for (const q of ['b1', 'b2']) expect((await call(kit, 'search', q, { client: 'victim' })).result).toBeDefined();
    } finally {
      diagnostics.rateLimit.unsubscribe(listener);
    }
    expect(ran).toEqual(['search:a1', 'fetch:a2', 'search:b1', 'search:b2']);
    expect(seen).toHaveLength(5);
    expect(seen[0]).toMatchObject({ outcome: 'refused', clientKey: 'attacker', scope: 'client', retryAfterMs: 1_000 });
    expect(seen[0]!.ctx.name).toBe('search');
  });

  it.skipIf(sdk.era === 'modern')(
    'the default client key tells sessions apart (2025 sessions without a principal)',
    async () => {
      const limiter = rateLimit({ perMethod: { 'tools/call': { burst: 1, perSecond: 0.001 } } });
      const ran: string[] = [];
      const { kit: a } = await open(sdk, limiter, ran, { sessionId: 'session-a' });
      const { kit: b } = await open(sdk, limiter, ran, { sessionId: 'session-b' });
      expect((await call(a, 'search', 'a')).result).toBeDefined();
      expect((await call(a, 'search', 'again')).error).toMatchObject({
        code: -32029,
        data: { scope: 'method', subject: 'tools/call', retryAfterSeconds: 1000 },
      });
      expect((await call(b, 'search', 'b')).result).toBeDefined();
      expect(ran).toEqual(['search:a', 'search:b']);
    },
  );

  it('a failing store fails the call with its error (nothing else disturbed); onStoreError: allow lets it through', async () => {
    let down = true;
    const store: RateLimitStore = {
      take: () =>
        down ? Promise.reject(new Error('store unreachable')) : { allowed: true, retryAfterMs: 0, refusedBy: -1 },
    };
    const ran: string[] = [];
    const strict = rateLimit({ perClient: { burst: 5, perSecond: 1 }, store });
    const { kit } = await open(sdk, strict, ran);
    const failed = await call(kit, 'search', 'x');
    expect(failed.error?.message).toMatch(/store unreachable/);
    down = false;
    expect((await call(kit, 'search', 'y')).result).toBeDefined();
    down = true;
    const reported: unknown[] = [];
    const lenient = rateLimit({
      perClient: { burst: 5, perSecond: 1 },
      store,
      onStoreError: 'allow',
      onError: (e) => reported.push(e),
    });
    const { kit: kit2 } = await open(sdk, lenient, ran);
    expect((await call(kit2, 'search', 'z')).result).toBeDefined();
    expect(reported).toHaveLength(1);
    expect(ran).toEqual(['search:y', 'search:z']);
    expect(strict.stats().storeErrors).toBe(1);
  });
});

it('rateLimit refuses bad options', () => {
  expect(() => rateLimit({})).toThrow(/perClient, perMethod or perTool/);
  expect(() => rateLimit({ perClient: { burst: 0, perSecond: 1 } })).toThrow(/burst/);
  expect(() => rateLimit({ perTool: { search: { burst: 1, perSecond: Number.NaN } } })).toThrow(/perSecond/);
  expect(() => rateLimit({ perClient: { burst: 1, perSecond: 1 }, onStoreError: 'maybe' as never })).toThrow();
});
