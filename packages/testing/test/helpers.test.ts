/** The test kit's shared helpers: pause, until, percentile, firstText and tetheredServer (on the wire). */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { handler, type Middleware, progressEvent } from '@mcp-tether/core';
import { firstText, pause, percentile, until } from '../src/index.js';
import { describeEachSdk, type MatrixClient, tetheredServer } from '../src/matrix.js';

describe('pause and until', () => {
  it('pause resolves after the delay', async () => {
    const t0 = Date.now();
    await pause(30);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(25); // timer granularity; no upper bound on a shared machine
  });

  it('until resolves once the predicate turns true', async () => {
    let flag = false;
    setTimeout(() => (flag = true), 20);
    await until(() => flag, 5_000, 'flag');
    expect(flag).toBe(true);
  });

  it('until rejects with what it waited for after the timeout', async () => {
    await expect(until(() => false, 30, 'the impossible')).rejects.toThrow('timed out waiting for the impossible');
  });
});

describe('percentile (nearest rank)', () => {
  it('picks values of the list', () => {
    const v = [5, 1, 3, 2, 4];
    expect(percentile(v, 0)).toBe(1);
    expect(percentile(v, 20)).toBe(1);
    expect(percentile(v, 21)).toBe(2);
    expect(percentile(v, 50)).toBe(3);
    expect(percentile(v, 99)).toBe(5);
    expect(percentile(v, 100)).toBe(5);
    expect(v).toEqual([5, 1, 3, 2, 4]); // not sorted in place
  });

  it('matches the definition on generated lists', () => {
    // Deterministic pseudo-random lists (LCG): at least p% of the values are <= the result, and
    // fewer than p% are strictly below it (for p > 0).
    let seed = 12345;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 300; round++) {
      const n = 1 + Math.floor(next() * 40);
      const values = Array.from({ length: n }, () => Math.floor(next() * 20) - 5);
      const p = Math.round(next() * 1000) / 10;
      const r = percentile(values, p);
      expect(values).toContain(r);
      expect(values.filter((x) => x <= r).length).toBeGreaterThanOrEqual((p / 100) * n - 1e-9);
      if (p > 0) expect(values.filter((x) => x < r).length).toBeLessThan((p / 100) * n);
    }
  });

  it('refuses an empty list and a p outside 0..100', () => {
    expect(() => percentile([], 50)).toThrow(RangeError);
    expect(() => percentile([1], -1)).toThrow(RangeError);
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], Number.NaN)).toThrow(RangeError);
  });
});

describe('firstText', () => {
  it("reads the first block's text, and nothing else", () => {
    expect(
      firstText({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('a');
    expect(firstText({ content: [{ type: 'image', data: '', mimeType: 'image/png' }] })).toBeUndefined();
    expect(firstText({ content: [{ type: 'text', text: 42 }] })).toBeUndefined();
    expect(firstText({ content: [] })).toBeUndefined();
    expect(firstText({ content: 'text' })).toBeUndefined();
    expect(firstText(undefined)).toBeUndefined();
    expect(firstText(null)).toBeUndefined();
  });
});

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describeEachSdk('tetheredServer', (sdk) => {
  it('serves tools through the given middlewares, in order, with no error', async () => {
    const seen: string[] = [];
    const mw = (name: string): Middleware => ({
      name,
      async handle(ctx, next) {
        seen.push(`${name}:${ctx.name}`);
        return next();
      },
    });
    const errors: unknown[] = [];
    kit = await sdk.connect(() => {
      const built = tetheredServer(sdk, [mw('outer'), mw('inner')], errors, { name: 'kit-test', version: '1.2.3' });
      expect(built.errors).toBe(errors);
      built.server.registerTool(
        'echo',
        { inputSchema: { s: z.string() } },
        handler(async ({ s }: { s: string }) => ({ content: [{ type: 'text' as const, text: s }] })),
      );
      return built.server;
    });
    expect(firstText(await kit.callTool('echo', { s: 'hi' }))).toBe('hi');
    expect(seen).toEqual(['outer:echo', 'inner:echo']);
    expect(errors).toEqual([]);
  });

  it('collects a middleware hook error instead of failing the call', async () => {
    const boom = new Error('event hook failed');
    const failing: Middleware = {
      name: 'failing-tap',
      onEvent(_ctx, event, next) {
        if (event.type === 'progress') throw boom;
        return next(event);
      },
    };
    const errors: unknown[] = [];
    kit = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [failing], errors);
      server.registerTool(
        'job',
        { inputSchema: {} },
        handler(async function* () {
          yield progressEvent(50, 100, 'half');
          return { content: [{ type: 'text' as const, text: 'done' }] };
        }),
      );
      return server;
    });
    expect(firstText(await kit.callTool('job', {}, { progressToken: 'p' }))).toBe('done');
    expect(errors).toEqual([boom]);
  });
});
