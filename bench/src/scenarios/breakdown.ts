/**
 * (1, detail) What each middleware adds per call: `tether(server, [])` (core alone), core plus each
 * middleware alone, and all six, all in ONE process (they all use core's AsyncLocalStorage, so they
 * pay its process-wide promise hooks alike), alternated over several rounds (order rotated).
 * Sequential calls of the trivial tool over the in-memory transport, tinybench; CPU time per call
 * from `process.cpuUsage()` around each block.
 */
import { Bench } from 'tinybench';
import { connectInMemory, type Connection } from '../servers.js';
import { median, round } from '../util.js';
import { STACKS } from './overhead.js';

export interface BreakdownParams {
  stacks: string[];
  calls: number;
  warmup: number;
  rounds: number;
}

export async function run(p: BreakdownParams) {
  const conns = new Map<string, Connection>();
  for (const s of p.stacks) {
    const make = STACKS[s];
    if (!make) throw new Error(`unknown stack ${s}`);
    const c = await connectInMemory(await make());
    for (let i = 0; i < p.warmup; i++) await c.client.callTool({ name: 'echo', arguments: { n: i } });
    conns.set(s, c);
  }
  const rows: Array<Record<string, { meanUs: number; p50Us: number; cpuUs: number }>> = [];
  for (let r = 0; r < p.rounds; r++) {
    const row: (typeof rows)[number] = {};
    const order = p.stacks.map((_, i) => p.stacks[(i + r) % p.stacks.length]!);
    for (const s of order) {
      const c = conns.get(s)!;
      const bench = new Bench({ iterations: p.calls, time: 0, warmup: false, throws: true });
      let n = 0;
      bench.add(s, async () => {
        await c.client.callTool({ name: 'echo', arguments: { n: n++ } });
      });
      const cpu0 = process.cpuUsage();
      await bench.run();
      const cpu = process.cpuUsage(cpu0);
      const res = bench.tasks[0]!.result as { latency: { mean: number; p50: number } };
      row[s] = {
        meanUs: res.latency.mean * 1000,
        p50Us: res.latency.p50 * 1000,
        cpuUs: (cpu.user + cpu.system) / p.calls,
      };
    }
    rows.push(row);
  }
  for (const c of conns.values()) await c.close();
  const base = p.stacks[0]!;
  const out: Record<string, Record<string, number>> = {};
  const med = (s: string, f: (r: (typeof rows)[number]) => number) => round(median(rows.map(f)));
  for (const s of p.stacks) {
    out[s] = {
      meanUs: med(s, (r) => r[s]!.meanUs),
      p50Us: med(s, (r) => r[s]!.p50Us),
      cpuUs: med(s, (r) => r[s]!.cpuUs),
      // Differences taken within each round (same moment, same machine load), then the median.
      addsMeanUs: med(s, (r) => r[s]!.meanUs - r[base]!.meanUs),
      addsP50Us: med(s, (r) => r[s]!.p50Us - r[base]!.p50Us),
      addsCpuUs: med(s, (r) => r[s]!.cpuUs - r[base]!.cpuUs),
    };
  }
  return { base, calls: p.calls, rounds: p.rounds, stacks: out };
}
