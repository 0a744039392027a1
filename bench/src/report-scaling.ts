/** The Markdown of sections 7–9: scaling at 10× the work, real transports, jobs on BullMQ. */
import { LABEL } from './report-calls.js';
import { fmt, table } from './report.js';

/** A row of the scaling table: a figure at 1× and at 10× (`digits` after the point), and their ratio. */
function compared(label: string, base: number, big: number, digits = 1): unknown[] {
  return [label, fmt(base, digits), fmt(big, digits), fmt(big / base, 2)];
}

/** (7) Scaling: sections 1, 3 and 5 at 10× the work. */
export function renderScaling(x: any): string {
  let out = '';
  out += `\n## 7. Scaling: 1, 3 and 5 at 10× the work\n\n`;
  const rows: unknown[][] = [];
  for (const k of ['bare', 'full']) {
    const big = x.overhead.runs[k];
    const base = x.overhead.base?.[k];
    if (big && base) {
      rows.push(compared(`(1) ${LABEL[k]}: mean µs per call`, base.meanUs, big.meanUs));
      rows.push(compared(`(1) ${LABEL[k]}: CPU µs per call`, base.cpuUsPerCall, (big.cpuMs * 1000) / big.calls));
    }
  }
  const cb = x.cancel?.base?.signal;
  const cs = x.cancel?.runs?.signal;
  if (cb && cs) {
    rows.push(compared(`(3) cancel latency p50 ms`, cb.p50Ms, cs.p50Ms, 3));
    rows.push(compared(`(3) cancel latency p99 ms`, cb.p99Ms, cs.p99Ms, 3));
  }
  const hbRows = (label: string, hb: any, hs: any) => {
    if (!hb || !hs) return;
    /** A row of one heartbeat figure at 1× (`hb`) and 10× (`hs`), with `digits` after the point. */
    const row = (what: string, key: string, digits = 1) =>
      rows.push(compared(`(5) ${label}: ${what}`, hb[key], hs[key], digits));
    rows.push([
      `(5) ${label}: silent calls, silenceMs`,
      `${fmt(hb.calls, 0)}, ${fmt(hb.silenceMs, 0)} ms`,
      `${fmt(hs.calls, 0)}, ${fmt(hs.silenceMs, 0)} ms`,
      '',
    ]);
    row('CPU ms per second', 'cpuMsPerSec');
    row('heartbeats sent per second', 'heartbeatsPerSec', 0);
    row('heartbeats per call per second', 'heartbeatsPerCallPerSec', 2);
    row('CPU µs per heartbeat', 'cpuUsPerHeartbeat', 2);
    rows.push([`(5) ${label}: timers alive`, fmt(hb.timersDuring?.all), fmt(hs.timersDuring?.all), '']);
    row('event-loop delay p99 ms', 'loopDelayP99Ms');
    if (hs.calls !== hb.calls) {
      row('heap per open call KiB', 'heapPerOpenCallKiB', 2);
      row('time to start all calls ms', 'startMs', 0);
    }
  };
  hbRows('10× demand', x.heartbeat?.base?.full, x.heartbeat?.runs?.full);
  hbRows('10× calls', x.heavy?.base?.full, x.heavy?.runs?.full);
  out += table(['measure', `1×`, `10×`, '10× / 1×'], rows);
  out += `\n1× = ${fmt(x.overhead.baseCalls, 0)} calls and ${fmt(x.cancel?.baseCalls, 0)} cancels; 10× = ${fmt(x.overhead.calls, 0)} and ${fmt(x.cancel?.calls, 0)}. (5) "10× demand": the same ${fmt(x.heartbeat?.calls, 0)} silent calls with silenceMs ${fmt(x.heartbeat?.baseSilenceMs, 0)} → ${fmt(x.heartbeat?.silenceMs, 0)}, i.e. ten times the heartbeats asked for per second. `;
  out += x.heavy
    ? `(5) "10× calls": ${fmt(x.heavy.baseCalls, 0)} → ${fmt(x.heavy.calls, 0)} watched calls, both at silenceMs ${fmt(x.heavy.silenceMs, 0)} (\`--heavy\`).`
    : `Ten times the watched calls (100 000 open calls) takes minutes to set up and runs only with \`--heavy\`.`;
  out += ` fastmcp is not run at 10× (its 1 ms floor per call; see the README). Absolute numbers of 1× and 10× come from different moments of the run: on a busy machine compare them with care.\n`;
  if (x.heartbeat?.unfinished) out += `\n(5) at 10×: ${x.heartbeat.unfinished}.\n`;
  if (x.skipped?.length) out += `\nSkipped to stay within the time budget: ${x.skipped.join(', ')}.\n`;
  return out;
}

/** (8) Over real transports: the trivial call through a server in a child process. */
export function renderTransport(transport: any): string {
  let out = '';
  const runs = Object.values<any>(transport);
  const first = runs[0];
  out += `\n## 8. Over real transports: the trivial call through a server in a child process\n\n`;
  out += `Sequential calls from this process (SDK client; HTTP 2026: one \`fetch\` POST per call), ${fmt(first?.stacks?.bare?.calls, 0)} per stack after ${fmt(first?.warmup, 0)} warm-up calls (cut at ${fmt((first?.maxMs ?? 0) / 1000, 0)} s), ${fmt(first?.rounds, 0)} rounds, a fresh server process per stack and round, order rotated; medians, ratios to bare taken within each round. Server CPU is the server process's own \`process.cpuUsage()\`.\n\n`;
  const TLABEL: Record<string, string> = {
    stdio: 'stdio (SDK 1.x)',
    'http-2025': 'Streamable HTTP, stateful session (SDK 1.x, 2025 era)',
    'http-2026': 'Streamable HTTP, stateless (SDK 2.x `createMcpHandler`, 2026-07-28)',
  };
  const SLABEL: Record<string, string> = {
    bare: 'bare SDK',
    core: '`tether(server, [])`',
    'full-noctx': 'all six, `{ asyncContext: false }`',
    full: 'all six (defaults)',
  };
  const rows: unknown[][] = [];
  for (const r of runs) {
    for (const [k, v] of Object.entries<any>(r.stacks)) {
      rows.push([
        TLABEL[r.transport] ?? r.transport,
        SLABEL[k] ?? k,
        fmt(v.calls, 0),
        fmt(v.usPerCall),
        fmt(v.overBareTime, 3),
        fmt(v.serverCpuUsPerCall),
        fmt(v.overBareServerCpu, 3),
        fmt(v.clientCpuUsPerCall),
        fmt(v.overBareTotalCpu, 3),
      ]);
    }
  }
  out += table(
    [
      'transport',
      'server',
      'calls',
      'µs/call',
      '× bare (time)',
      'server CPU µs/call',
      '× bare (server CPU)',
      'client CPU µs/call',
      '× bare (client + server CPU)',
    ],
    rows,
  );
  return out;
}

export function renderBullmq(b: any): string {
  let out = `\n## 9. Jobs on BullMQ: a trivial job, enqueue → complete\n\n`;
  if (b.skipped) return `${out}Skipped: ${b.skipped}.\n`;
  out += `One redis-server on loopback. Latency: ${fmt(b.params.sequential, 0)} jobs one after another (a tether job is a \`tools/call\` answered inline when the job completes; a raw one ends at the worker's \`completed\` event); jobs/s: ${fmt(b.params.burst, 0)} started at once. Workers run in this process (own BullMQ connections). Redis memory: \`used_memory\` while ${fmt(b.params.held, 0)} jobs are held running, per job. "× raw" compares tether on BullMQ with raw BullMQ on as many workers.\n\n`;
  out += table(
    ['variant', 'p50 ms', 'p99 ms', 'jobs/s', '× raw (p50)', 'raw jobs/s ÷ ours', 'Redis bytes per held job'],
    b.rows.map((r: any) => [
      r.variant,
      fmt(r.p50Ms, 2),
      fmt(r.p99Ms, 2),
      fmt(r.jobsPerSec, 0),
      fmt(r.overRawP50, 2),
      fmt(r.rawOverJobsPerSec, 2),
      fmt(r.redisBytesPerHeldJob, 0),
    ]),
  );
  return out;
}
