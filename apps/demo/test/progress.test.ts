/** Progress and heartbeats (@mcp-tether/progress, @mcp-tether/heartbeat) on the wire. */
import { connect, type TestClient } from '@mcp-tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoApp } from '../src/index.js';
import { textOf } from './helpers.js';

let kit: TestClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

const increasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]!);

describe('report.generate', () => {
  it('with a progress token gives strictly increasing progress, then the result', async () => {
    kit = await connect(createDemoApp().createServer());
    const r = await kit.callTool('report.generate', { rows: 6, delayMs: 60 }, { progressToken: 'report-1' });
    expect(textOf(r)).toMatch(/^Report: 6 rows, total \d+, mean [\d.]+$/);
    const seen = kit.wire.progress('report-1');
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(increasing(seen.map((p) => p.progress))).toBe(true);
    expect(seen.every((p) => p.total === 100 && p.progress <= 100 && p.progressToken === 'report-1')).toBe(true);
    expect(seen.at(-1)).toMatchObject({ progress: 100, message: 'summary written' });
    const response = kit.wire
      .fromServer()
      .find((m) => m.message.result && textOf(m.message.result).startsWith('Report:'))!;
    expect(seen.every((p) => p.seq < response.seq)).toBe(true);
  });

  it('echoes a numeric token, 0 included', async () => {
    kit = await connect(createDemoApp().createServer());
    await kit.callTool('report.generate', { rows: 2, delayMs: 0 }, { progressToken: 0 });
    const seen = kit.wire.progress(0);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((p) => p.progressToken === 0)).toBe(true);
  });

  it('sends no progress without a token', async () => {
    kit = await connect(createDemoApp().createServer());
    await kit.callTool('report.generate', { rows: 3, delayMs: 10 });
    expect(kit.wire.notifications('notifications/progress')).toHaveLength(0);
  });
});

it('progress.flood: 100 000 iterations become a bounded number of notifications', async () => {
  kit = await connect(createDemoApp().createServer());
  const r = await kit.callTool('progress.flood', { iterations: 100_000 }, { progressToken: 'flood' });
  expect(textOf(r)).toBe('100000');
  const seen = kit.wire.progress('flood');
  expect(seen.length).toBeGreaterThan(0);
  expect(seen.length).toBeLessThanOrEqual(110);
  expect(increasing(seen.map((p) => p.progress))).toBe(true);
  expect(seen.at(-1)!.progress).toBe(100_000); // the latest value is flushed before the result
});

it('test_tool_with_progress reports 0, 50, 100 of 100', async () => {
  kit = await connect(createDemoApp({ conformanceFixtures: true }).createServer());
  await kit.callTool('test_tool_with_progress', {}, { progressToken: 'progress-test-1' });
  expect(kit.wire.progress('progress-test-1').map((p) => [p.progress, p.total])).toEqual([
    [0, 100],
    [50, 100],
    [100, 100],
  ]);
});

describe('heartbeat', () => {
  it('job.quiet with a progress token gets heartbeats while silent, and none after the result', async () => {
    kit = await connect(createDemoApp({ heartbeatSilenceMs: 100 }).createServer());
    const r = await kit.callTool('job.quiet', { ms: 700 }, { progressToken: 'quiet' });
    expect(textOf(r)).toBe('done');
    const beats = kit.wire.progress('quiet');
    expect(beats.length).toBeGreaterThanOrEqual(2);
    expect(increasing(beats.map((p) => p.progress))).toBe(true);
    expect(beats.every((b) => typeof b.message === 'string' && b.message.includes('still working'))).toBe(true);
    const count = beats.length;
    await new Promise((res) => setTimeout(res, 300));
    expect(kit.wire.progress('quiet')).toHaveLength(count);
  });

  it('sends nothing for a silent call without a progress token', async () => {
    kit = await connect(createDemoApp({ heartbeatSilenceMs: 100 }).createServer());
    await kit.callTool('job.quiet', { ms: 400 });
    expect(kit.wire.notifications('notifications/progress')).toHaveLength(0);
  });
});
