/**
 * CI smoke test of the benchmark harness: runs `--quick` (tiny sizes) as a child process and checks
 * that it produced a well-formed report. No thresholds: speed is not asserted here.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { options } from '../tsup.config.js';

const benchRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = mkdtempSync(join(tmpdir(), 'tether-bench-quick-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

// Build the harness as `pnpm bench:quick` does (plain JS in dist/: no TypeScript loader per process).
beforeAll(async () => {
  await build({ ...options, entry: [join(benchRoot, 'src/**/*.ts')], outDir: join(benchRoot, 'dist'), silent: true });
});

const finite = expect.any(Number);

test('bench --quick runs every scenario and writes a well-formed JSON report and Markdown table', () => {
  const r = spawnSync(process.execPath, ['dist/main.js', '--quick', '--out', out], {
    cwd: benchRoot,
    encoding: 'utf8',
    timeout: 170_000,
  });
  expect(r.stderr).toContain('done in');
  expect(r.status, r.stderr).toBe(0);

  const report = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8'));
  expect(report.meta).toMatchObject({ mode: 'quick', node: process.version, errors: [] });
  expect(report.meta.versions.fastmcp).toMatch(/^\d+\.\d+\.\d+/);

  // One target per measurement with a target (1, 2a, 2b, 3, 4, 5, 6, 10a-c): values, never asserted.
  expect(report.targets.map((t: { id: string }) => t.id)).toEqual([
    '1',
    '2a',
    '2b',
    '3',
    '4',
    '5',
    '6',
    '10a',
    '10b',
    '10c',
  ]);
  for (const t of report.targets)
    expect(t).toMatchObject({
      what: expect.any(String),
      target: expect.any(String),
      value: expect.any(String),
      met: expect.any(Boolean),
    });

  const s = report.sections;
  for (const stack of ['bare', 'full', 'fastmcp']) {
    expect(s.overhead.stacks[stack]).toMatchObject({
      calls: expect.any(Number),
      meanUs: finite,
      p50Us: finite,
      p99Us: finite,
      overBareMean: finite,
    });
  }
  for (const kind of ['bare', 'fastmcp', 'ours']) {
    expect(s.flood.runs[kind]).toMatchObject({
      iterations: 2000,
      notifications: finite,
      wallMs: finite,
      clientCpuMs: finite,
      serverCpuMs: finite,
    });
  }
  // Harness sanity: the wire counter sees every notification the bare SDK sends (one per iteration).
  expect(s.flood.runs.bare.notifications).toBe(2000);
  expect(s.cancel.signal).toMatchObject({ calls: 50, p50Ms: finite, p99Ms: finite });
  expect(s.cancel.signal.measured + s.cancel.signal.cancelledBeforeHandler).toBe(50);
  expect(s.mutex.sequential).toMatchObject({ noneUs: finite, mutexUs: finite, storeAcquireReleaseUs: finite });
  expect(s.mutex.waiters.cycles).toHaveLength(2);
  expect(s.mutex.waiters.finalStats).toMatchObject({ queued: 0, running: 0 });
  expect(s.heartbeat.full).toMatchObject({
    calls: 300,
    cpuMsPerSec: finite,
    heartbeatsPerSec: finite,
    timersAfter: { all: 0 },
  });
  expect(s.memory.runs[0]).toMatchObject({ workload: 'echo', growthKiB: finite });
  expect(s.memory.openCalls.full).toMatchObject({ calls: 200, heapPerCallKiB: finite });

  // (10) attacks: a baseline and every attack ran, each with the victim's numbers and the attacker's outcomes.
  for (const kind of ['baseline', 'sessions', 'jobs', 'calls', 'bodies', 'events']) {
    const phase = s.attack.phases[kind];
    expect(phase.victim).toMatchObject({ all: { n: finite, p50Ms: finite, p99Ms: finite }, refused: finite });
    expect(phase.server).toMatchObject({ baseRssMiB: finite, peakRssMiB: finite, peakBodyBytesInFlightMiB: finite });
    if (kind !== 'baseline')
      expect(phase.attacker).toMatchObject({ kind, requests: finite, outcomes: expect.any(Object) });
  }
  // Harness sanity: every withheld body was answered or dropped before the attacker gave up waiting.
  expect(s.attack.phases.bodies.attacker).toMatchObject({ stillOpenAtEnd: 0, dropAfterLastByteMs: { max: finite } });

  const md = readFileSync(join(out, 'latest.md'), 'utf8');
  expect(md).toMatch(/^# Benchmarks: quick run/);
  for (const h of [
    '## Targets',
    '## 1. Overhead',
    '## 2. Progress flood',
    '## 3. Cancel latency',
    '## 4. Mutex',
    '## 5. Heartbeat',
    '## 6. Memory',
    '## 10. Attacks',
  ])
    expect(md).toContain(h);
});
