/**
 * Property: for any sequence of reports (with duplicates, decreases, NaN, ±Infinity, values above
 * total) and any spacing in time, what reaches the wire is exactly what the throttle rules say,
 * computed by an independent reference model; it is strictly increasing, never above total, made
 * only of reported values, ends with the largest valid value, and comes before the response.
 *
 * Time is fake (vitest fake timers, which also fake `performance.now`): the handler advances the
 * clock between reports, so held-back values are released exactly when the rules allow.
 */
import { handler, tether } from '@mcp-tether/core';
import { connect } from '@mcp-tether/testing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { progress, progressMiddleware } from '../src/index.js';

interface Step {
  value: number;
  /** ms of (fake) time that pass before this report */
  dt: number;
}

/** The throttle rules, written independently of the implementation. */
function model(steps: Step[], total: number | undefined, I: number, D: number): number[] {
  const out: number[] = [];
  let now = 0;
  let last: number | undefined;
  let lastAt = 0;
  let pending: number | undefined;
  let armed = false; // a held-back value is waiting for the time rule only
  const valid = (v: number) =>
    Number.isFinite(v) && (total === undefined || v <= total) && v > (pending ?? last ?? Number.NEGATIVE_INFINITY);
  const send = (v: number, at: number) => {
    out.push(v);
    last = v;
    lastAt = at;
    pending = undefined;
  };
  for (const { value, dt } of steps) {
    // time passes: a held-back value goes out as soon as both rules allow it
    if (armed && pending !== undefined && lastAt + I <= now + dt) send(pending, lastAt + I);
    if (armed && pending === undefined) armed = false;
    now += dt;
    if (!valid(value)) continue;
    if (last === undefined || (now - lastAt >= I && value - last >= D)) {
      send(value, now);
      continue;
    }
    pending = value;
    if (I > 0 && value - last >= D) armed = true;
  }
  if (pending !== undefined) out.push(pending); // flush before the result
  return out;
}

const valueArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -5, max: 120 }) },
  { weight: 2, arbitrary: fc.double({ min: -5, max: 120, noNaN: true }) },
  { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY) },
);
const stepArb = fc.record({ value: valueArb, dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 })) });

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('throttle property (fake time, real SDK client and server)', () => {
  it('the wire carries exactly what the rules allow, strictly increasing, ending with the largest valid value', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { maxLength: 40 }),
        fc.constantFrom(undefined, 100, 50),
        fc.constantFrom(0, 1, 50, 200),
        fc.oneof(fc.constant(undefined), fc.constantFrom(0, 0.5, 1, 10)),
        async (steps, total, minIntervalMs, minDeltaOpt) => {
          const server = tether(new McpServer({ name: 'prop', version: '1' }), [
            progressMiddleware({ minIntervalMs, minDelta: minDeltaOpt }),
          ]);
          server.registerTool(
            'run',
            { inputSchema: {} },
            handler(async function* () {
              for (const { value, dt } of steps) {
                if (dt) vi.advanceTimersByTime(dt);
                yield progress(
                  total === undefined
                    ? { progress: value, message: `m${value}` }
                    : { progress: value, total, message: `m${value}` },
                );
              }
              return { content: [{ type: 'text' as const, text: 'end' }] };
            }),
          );
          const kit = await connect(server);
          try {
            const call = kit.start('run', {}, { id: 'r', progressToken: 'tok' });
            // The handler never waits on a timer; the response arrives through microtasks only.
            for (let i = 0; i < 1_000 && !kit.wire.responseTo('r'); i++) await vi.advanceTimersByTimeAsync(0);
            const res = await call.response();
            expect(res.result?.content?.[0]?.text).toBe('end');
            const sent = kit.wire.progress('tok');
            const values = sent.map((p) => p.progress);
            const D = minDeltaOpt ?? (total === undefined ? 0 : total * 0.01);
            expect(values).toEqual(model(steps, total, minIntervalMs, D));
            // invariants, independent of the model
            for (let i = 1; i < values.length; i++) expect(values[i]!).toBeGreaterThan(values[i - 1]!);
            for (const p of sent) {
              expect(Number.isFinite(p.progress)).toBe(true);
              if (total !== undefined) expect(p.progress).toBeLessThanOrEqual(total);
              expect(p.message).toBe(`m${p.progress}`); // a reported value, with its own message: never rewritten
              expect(p.progressToken).toBe('tok');
            }
            const validValues = steps
              .map((s) => s.value)
              .filter((v) => Number.isFinite(v) && (total === undefined || v <= total));
            if (validValues.length) expect(values.at(-1)).toBe(Math.max(...validValues));
            else expect(values).toEqual([]);
            const rseq = kit.wire.responseTo('r')!.seq;
            expect(sent.every((p) => p.seq < rseq)).toBe(true);
          } finally {
            await kit.close();
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
