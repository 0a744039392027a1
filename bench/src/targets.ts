/** The targets of the report: each measured value beside the issue's bound (met or missed, never a failure). */
import { attackTargets } from './report-attack.js';
import type { Report, Target } from './report.js';

export function targets(sec: Report['sections']): Target[] {
  const t: Target[] = [];
  const o = sec.overhead?.stacks;
  if (o?.full) {
    // The mean decides; CPU, bytes and the AsyncLocalStorage reference say how much of it is noise or ALS.
    const als = o['bare-als'];
    const context = `CPU ${o.full.overBareCpu}×, bytes ${o.full.overBareAlloc}×${als ? `; AsyncLocalStorage alone ${als.overBareMean}× mean, ${als.overBareCpu}× CPU` : ''}`;
    t.push({
      id: '1',
      what: 'overhead: full stack / bare SDK, mean per call',
      target: '<= 1.10',
      value: `${o.full.overBareMean}× (${context})`,
      met: o.full.overBareMean <= 1.1,
    });
  }
  const f = sec.flood?.runs;
  if (f?.ours) {
    t.push({
      id: '2a',
      what: 'flood: notifications on the wire (ours, throttled)',
      target: '<= 101',
      value: String(f.ours.notifications),
      met: f.ours.notifications <= 101,
    });
    const peers = ['bare', 'fastmcp'].filter((k) => f[k]);
    if (peers.length) {
      const faster = peers.every((k) => f.ours.wallMs < f[k].wallMs);
      t.push({
        id: '2b',
        what: 'flood: ours faster end to end than the bare SDK and fastmcp',
        target: 'faster than both',
        value: `${f.ours.wallMs} ms vs ${peers.map((k) => `${k} ${f[k].wallMs} ms`).join(', ')}`,
        met: faster,
      });
    }
  }
  for (const [style, r] of Object.entries<any>(sec.cancel ?? {})) {
    t.push({
      id: '3',
      what: `cancel latency p99 (${style} handler)`,
      target: '< 5 ms',
      value: `${r.p99Ms} ms`,
      met: r.p99Ms < 5,
    });
  }
  const w = sec.mutex?.waiters?.cycles as any[] | undefined;
  if (w?.length) {
    const worst = Math.max(...w.map((c) => Math.abs(c.heapAfterDrainKiB)));
    t.push({
      id: '4',
      what: `mutex: heap after draining ${sec.mutex.waiters.waiters} waiters (half aborted) vs baseline`,
      target: 'back to baseline (|Δ| < 256 KiB)',
      value: `${worst} KiB`,
      met: worst < 256,
    });
  }
  const h = sec.heartbeat?.full;
  if (h) {
    const n = h.timersDuring?.all ?? h.timersDuring?.refed;
    t.push({
      id: '5',
      what: `heartbeat: timers alive with ${h.calls} silent calls`,
      target: '1',
      value: String(n),
      met: n === 1,
    });
  }
  for (const m of (sec.memory?.runs ?? []) as any[]) {
    // The target is the issue's: 100 000 trivial calls through the full stack (the others are for reference).
    if (m.stack !== 'full' || m.workload !== 'echo') continue;
    t.push({
      id: '6',
      what: `memory: heap growth ${m.small} → ${m.large} calls (${m.workload})`,
      target: '< 1 MiB',
      value: `${m.growthKiB} KiB`,
      met: m.growthKiB < 1024,
    });
  }
  t.push(...attackTargets(sec.attack));
  return t;
}
