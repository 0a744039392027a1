/** The report: its JSON shape and the Markdown tables made from it. */
import { renderAttack } from './report-attack.js';

export interface Target {
  id: string;
  what: string;
  target: string;
  value: string;
  met: boolean;
}

export interface Report {
  meta: {
    mode: 'full' | 'quick';
    date: string;
    command: string;
    node: string;
    platform: string;
    cpus: string;
    memoryGiB: number;
    loadAverageBefore: number[];
    loadAverageAfter: number[];
    durationSec: number;
    versions: Record<string, string>;
    errors: string[];
  };
  targets: Target[];
  sections: Partial<
    Record<
      | 'overhead'
      | 'flood'
      | 'cancel'
      | 'mutex'
      | 'heartbeat'
      | 'memory'
      | 'scaling'
      | 'transport'
      | 'bullmq'
      | 'attack',
      any
    >
  >;
}

export const fmt = (x: unknown, d = 1): string => {
  if (x === undefined || x === null) return '–';
  if (typeof x !== 'number') return String(x);
  if (!Number.isFinite(x)) return String(x);
  return x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: 0 });
};

export function table(head: string[], rows: unknown[][]): string {
  const line = (cells: unknown[]) => `| ${cells.map((c) => String(c ?? '–')).join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n') + '\n';
}

const LABEL: Record<string, string> = {
  bare: 'bare SDK `McpServer`',
  full: 'all six middlewares (`tether()`, defaults: async context on, mrtr asks for it)',
  'full-noctx': 'all six middlewares, `{ asyncContext: false }`',
  fastmcp: 'fastmcp',
  core: '`tether(server, [])` (core alone)',
  'bare-als': 'reference: bare SDK + `AsyncLocalStorage.run` per call (no tether)',
  cancel: 'core + cancel()',
  heartbeat: 'core + heartbeat()',
  progress: 'core + progressMiddleware()',
  'log-channel': 'core + logChannel()',
  mrtr: 'core + mrtr()',
  mutex: 'core + mutex()',
};

const FLOOD_LABEL: Record<string, string> = {
  bare: 'bare SDK, `sendNotification` per iteration',
  fastmcp: 'fastmcp, `reportProgress` per iteration',
  ours: 'ours: full stack, generator `yield progress()` (throttled, defaults)',
  'ours-ctx': 'ours: full stack, `await ctx.progress()` (throttled, defaults)',
  'ours-delta': 'ours: full stack, `minIntervalMs: 0` (1% delta rule only)',
};

export function renderMarkdown(r: Report): string {
  const m = r.meta;
  const s = r.sections;
  let out = `# Benchmarks: ${m.mode} run\n\n`;
  out += `- Command: \`${m.command}\` (from the repository root; \`npm run bench\` works too)\n`;
  out += `- Date: ${m.date}; took ${fmt(m.durationSec)} s\n`;
  out += `- Machine: Node ${m.node}, ${m.platform}, ${m.cpus}, ${fmt(m.memoryGiB)} GiB\n`;
  out += `- Load average (1, 5, 15 min) before: ${m.loadAverageBefore.join(', ')}; after: ${m.loadAverageAfter.join(', ')}\n`;
  out += `- Versions: ${Object.entries(m.versions)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}\n`;
  if (m.mode === 'quick')
    out += `\n> Quick mode: sizes are tiny, this run only proves the harness works. Do not read the numbers.\n`;
  if (m.loadAverageBefore[0]! > 1.5)
    out += `\n> The machine was busy (load average ${m.loadAverageBefore[0]}): absolute times are inflated and ratios noisy.\n`;
  if (m.errors.length) out += `\n> **Scenarios that failed:** ${m.errors.join('; ')}\n`;

  if (r.targets.length) {
    out += `\n## Targets\n\n`;
    out += table(
      ['#', 'what', 'target', 'measured', ''],
      r.targets.map((t) => [t.id, t.what, t.target, t.value, t.met ? 'met' : '**missed**']),
    );
  }

  if (s.overhead) {
    const o = s.overhead;
    out += `\n## 1. Overhead: sequential \`tools/call\` of a trivial tool, in memory\n\n`;
    out += `Median over rounds; each stack in a fresh process per round, order rotated; ratios taken within a round. Latency per call as seen by the SDK client (tinybench, one sample per call); CPU per call is the whole process (client + server), the figure least disturbed by other load on the machine.\n\n`;
    out += table(
      [
        'server',
        'calls × rounds',
        'mean µs',
        'p50 µs',
        'p99 µs',
        'CPU µs/call',
        'calls/s',
        '× bare (mean)',
        '× bare (p50)',
        '× bare (CPU)',
        'KiB allocated/call',
        '× bare (alloc)',
        'promises/call',
      ],
      Object.entries<any>(o.stacks).map(([k, v]) => [
        LABEL[k] ?? k,
        `${fmt(v.calls, 0)} × ${v.rounds}`,
        fmt(v.meanUs),
        fmt(v.p50Us),
        fmt(v.p99Us),
        fmt(v.cpuUsPerCall),
        fmt(v.callsPerSec, 0),
        fmt(v.overBareMean, 2),
        fmt(v.overBareP50, 2),
        fmt(v.overBareCpu, 2),
        v.allocBytesPerCall === undefined ? '–' : fmt(v.allocBytesPerCall / 1024, 1),
        fmt(v.overBareAlloc, 2),
        v.promisesPerCall === undefined || Number.isNaN(v.promisesPerCall) ? '–' : fmt(v.promisesPerCall, 1),
      ]),
    );
    out += `
Bytes allocated per call (client + server, objects collected by GCs included) come from the sampling heap profiler over up to 2 000 more calls after the timed ones: unlike times, they do not depend on the machine's load. On this workload about a quarter of the time is garbage collection, so allocation drives a good part of the time ratio.\n`;
    const alloc = Object.entries<any>(o.stacks).filter(([, v]) => Array.isArray(v.allocByPackage));
    if (alloc.length) {
      out += `
<details><summary>Bytes allocated per call, by package</summary>

`;
      for (const [k, v] of alloc) {
        out += `${LABEL[k] ?? k}: ${v.allocByPackage.map((x: any) => `${x.name} ${fmt(x.bytesPerCall, 0)}`).join(', ')}

`;
      }
      out += `</details>
`;
    }
    if (o.breakdown) {
      const b = o.breakdown;
      out += `\nWhat each middleware adds per call on top of core (\`tether(server, [])\`): one process, ${fmt(b.calls, 0)} calls × ${b.rounds} rounds alternated; differences taken within each round, then the median.\n\n`;
      const d = (k: string, v: number) => (k === b.base ? '' : fmt(v));
      out += table(
        ['stack', 'mean µs', 'p50 µs', 'CPU µs/call', 'adds: mean µs', 'adds: p50 µs', 'adds: CPU µs'],
        Object.entries<any>(b.stacks).map(([k, v]) => [
          LABEL[k] ?? k,
          fmt(v.meanUs),
          fmt(v.p50Us),
          fmt(v.cpuUs),
          d(k, v.addsMeanUs),
          d(k, v.addsP50Us),
          d(k, v.addsCpuUs),
        ]),
      );
    }
    if (o.profiles) out += renderProfiles('CPU profile of the measured calls', o.profiles);
  }

  if (s.flood) {
    const f = s.flood;
    out += `\n## 2. Progress flood: ${fmt(f.iterations, 0)} iterations with a progress token, over stdio\n\n`;
    out += `Server in a child process; client CPU is the client process only, server CPU comes from the server's own \`process.cpuUsage()\`. "On the wire" counts what reached the client transport; "seen" is what the SDK client's \`onprogress\` delivered.\n\n`;
    out += table(
      ['server', 'on the wire', 'seen', 'wire KiB', 'wall ms', 'client CPU ms', 'server CPU ms'],
      Object.entries<any>(f.runs).map(([k, v]) => [
        FLOOD_LABEL[k] ?? k,
        fmt(v.notifications, 0),
        fmt(v.seenByClient, 0),
        fmt(v.wireKiB),
        fmt(v.wallMs, 0),
        fmt(v.clientCpuMs, 0),
        fmt(v.serverCpuMs, 0),
      ]),
    );
  }

  if (s.cancel) {
    out += `\n## 3. Cancel latency: \`notifications/cancelled\` arriving at the server → the handler's \`finally\`\n\n`;
    out += table(
      ['handler', 'calls', 'measured', 'cancelled before the handler ran', 'p50 ms', 'p99 ms', 'max ms'],
      Object.entries<any>(s.cancel).map(([k, v]) => [
        k === 'signal'
          ? 'async, `sleep(1, ctx.signal)` loop'
          : 'generator, 1 ms timer without the signal, `yield progress()`',
        fmt(v.calls, 0),
        fmt(v.measured, 0),
        fmt(v.cancelledBeforeHandler, 0),
        fmt(v.p50Ms, 3),
        fmt(v.p99Ms, 3),
        fmt(v.maxMs, 3),
      ]),
    );
  }

  if (s.mutex) {
    const x = s.mutex;
    out += `\n## 4. Mutex: destructive calls on one key\n\n`;
    out += table(
      ['measure', 'no mutex', 'mutex()', 'difference'],
      [
        [
          `${fmt(x.sequential.calls, 0)} sequential calls × ${x.sequential.rounds} rounds: mean µs per call`,
          fmt(x.sequential.noneUs),
          fmt(x.sequential.mutexUs),
          `${fmt(x.sequential.overheadUs, 2)} µs (${fmt(x.sequential.ratio, 3)}×)`,
        ],
        [
          '… p50 µs per call',
          fmt(x.sequential.noneP50Us),
          fmt(x.sequential.mutexP50Us),
          `${fmt(x.sequential.overheadP50Us, 2)} µs`,
        ],
        [
          '… CPU µs per call',
          fmt(x.sequential.noneCpuUs),
          fmt(x.sequential.mutexCpuUs),
          `${fmt(x.sequential.overheadCpuUs, 2)} µs`,
        ],
        ['`MemoryLockStore` acquire + release alone, µs', '', fmt(x.sequential.storeAcquireReleaseUs, 3), ''],
        [
          `${fmt(x.concurrent.calls, 0)} calls sent at once, ms until all answered`,
          fmt(x.concurrent.noneMs, 0),
          fmt(x.concurrent.mutexMs, 0),
          `${fmt(x.concurrent.ratio, 2)}×`,
        ],
      ],
    );
    out += `\nThe end-to-end difference of one uncontended acquisition is a few µs at most, within the noise of a whole call; the store's own acquire + release is the row above it.\n`;
    out += `\n${fmt(x.waiters.waiters, 0)} waiters queued behind one holder, half cancelled by the client, then the holder released (heap after GC, relative to the baseline taken after a warm-up cycle):\n\n`;
    out += table(
      [
        'cycle',
        'aborted',
        'ran',
        'aborted waiters left the queue in ms',
        'drain ms',
        'heap with the queue',
        'heap after drain',
      ],
      (x.waiters.cycles as any[]).map((c, i) => [
        i + 1,
        c.aborted,
        c.ran,
        fmt(c.leaveMs, 1),
        fmt(c.drainMs, 1),
        `${fmt(c.heapWithQueueKiB, 0)} KiB`,
        `${fmt(c.heapAfterDrainKiB, 1)} KiB`,
      ]),
    );
  }

  if (s.heartbeat) {
    out += `\n## 5. Heartbeat: silent calls with progress tokens, \`silenceMs\` ${Object.values<any>(s.heartbeat)[0]?.silenceMs}\n\n`;
    const sm = Object.values<any>(s.heartbeat)[0]?.silenceMs;
    out += `Raw JSON-RPC client in the same process (counts messages only), so the CPU is the server's. "none" is the same stack without heartbeat(). At full speed each silent call gets one heartbeat every ${sm}–${fmt(sm * 1.25, 0)} ms (${fmt(800 / sm, 1)}–${fmt(1000 / sm, 1)} per call per second); fewer means the process could not keep up.\n\n`;
    out += renderHeartbeat(s.heartbeat);
    const hf = s.heartbeat.full;
    const hn = s.heartbeat.none;
    if (hf && hn) {
      out += `\nHeartbeating itself: ${fmt(hf.cpuMsPerSec - hn.cpuMsPerSec)} ms of CPU per second (all six minus none) for ${fmt(hf.heartbeatsPerSec, 0)} heartbeats per second, about ${fmt(((hf.cpuMsPerSec - hn.cpuMsPerSec) * 1000) / hf.heartbeatsPerSec, 1)} µs each.\n`;
    }
    for (const v of Object.values<any>(s.heartbeat))
      if (v.profile) out += renderProfiles('CPU profile of the heartbeat window', { [v.variant]: v.profile });
  }

  if (s.memory) {
    out += `\n## 6. Memory: heap after GC, sequential calls with a real SDK client\n\n`;
    out += table(
      [
        'stack',
        'workload',
        'heap after first calls',
        'heap after all calls',
        'growth',
        'growth over the second half',
        'bytes per extra call',
      ],
      (s.memory.runs as any[]).map((v) => [
        v.stack === 'full' ? 'all six middlewares' : 'bare SDK',
        `${v.workload === 'echo' ? 'trivial tool, no token' : '3 progress + 1 log line, with token'}; ${fmt(v.small, 0)} → ${fmt(v.large, 0)} calls`,
        `${fmt(v.heapSmallMiB, 2)} MiB`,
        `${fmt(v.heapLargeMiB, 2)} MiB`,
        `${fmt(v.growthKiB, 1)} KiB`,
        `${fmt(v.secondHalfGrowthKiB, 1)} KiB`,
        fmt(v.bytesPerExtraCall, 2),
      ]),
    );
    const oc = s.memory.openCalls as Record<string, any> | undefined;
    if (oc && Object.keys(oc).length) {
      const any = Object.values<any>(oc)[0];
      out += `\nWhat one call **in flight** keeps alive (${fmt(any.calls, 0)} silent calls held open, raw client; heap after GC, and heap snapshot counts per open call):\n\n`;
      out += table(
        ['stack', 'KiB per open call', 'promises', 'closures', 'suspended async functions', 'contexts', 'heap numbers'],
        Object.values<any>(oc).map((v) => [
          LABEL[v.stack] ?? v.stack,
          fmt(v.heapPerCallKiB, 2),
          fmt(v.perCall?.promises),
          fmt(v.perCall?.closures),
          fmt(v.perCall?.suspendedAsyncFunctions),
          fmt(v.perCall?.contexts),
          fmt(v.perCall?.heapNumbers),
        ]),
      );
      const full = oc.full;
      if (full?.topByBytes) {
        out += `\n<details><summary>Heap snapshot: bytes per open call by constructor (all six)</summary>\n\n`;
        out += table(
          ['constructor', 'count per call', 'bytes per call'],
          full.topByBytes.map((x: any) => [x.name, fmt(x.count, 2), fmt(x.bytes, 0)]),
        );
        out += `\n</details>\n`;
      }
    }
  }

  if (s.scaling) {
    const x = s.scaling;
    out += `\n## 7. Scaling: 1, 3 and 5 at 10× the work\n\n`;
    const rows: unknown[][] = [];
    for (const k of ['bare', 'full']) {
      const big = x.overhead.runs[k];
      const base = x.overhead.base?.[k];
      if (big && base) {
        rows.push([
          `(1) ${LABEL[k]}: mean µs per call`,
          fmt(base.meanUs),
          fmt(big.meanUs),
          fmt(big.meanUs / base.meanUs, 2),
        ]);
        const bigCpu = (big.cpuMs * 1000) / big.calls;
        rows.push([
          `(1) ${LABEL[k]}: CPU µs per call`,
          fmt(base.cpuUsPerCall),
          fmt(bigCpu),
          fmt(bigCpu / base.cpuUsPerCall, 2),
        ]);
      }
    }
    const cb = x.cancel?.base?.signal;
    const cs = x.cancel?.runs?.signal;
    if (cb && cs) {
      rows.push([`(3) cancel latency p50 ms`, fmt(cb.p50Ms, 3), fmt(cs.p50Ms, 3), fmt(cs.p50Ms / cb.p50Ms, 2)]);
      rows.push([`(3) cancel latency p99 ms`, fmt(cb.p99Ms, 3), fmt(cs.p99Ms, 3), fmt(cs.p99Ms / cb.p99Ms, 2)]);
    }
    const hbRows = (label: string, hb: any, hs: any) => {
      if (!hb || !hs) return;
      rows.push([
        `(5) ${label}: silent calls, silenceMs`,
        `${fmt(hb.calls, 0)}, ${fmt(hb.silenceMs, 0)} ms`,
        `${fmt(hs.calls, 0)}, ${fmt(hs.silenceMs, 0)} ms`,
        '',
      ]);
      rows.push([
        `(5) ${label}: CPU ms per second`,
        fmt(hb.cpuMsPerSec),
        fmt(hs.cpuMsPerSec),
        fmt(hs.cpuMsPerSec / hb.cpuMsPerSec, 2),
      ]);
      rows.push([
        `(5) ${label}: heartbeats sent per second`,
        fmt(hb.heartbeatsPerSec, 0),
        fmt(hs.heartbeatsPerSec, 0),
        fmt(hs.heartbeatsPerSec / hb.heartbeatsPerSec, 2),
      ]);
      rows.push([
        `(5) ${label}: heartbeats per call per second`,
        fmt(hb.heartbeatsPerCallPerSec, 2),
        fmt(hs.heartbeatsPerCallPerSec, 2),
        fmt(hs.heartbeatsPerCallPerSec / hb.heartbeatsPerCallPerSec, 2),
      ]);
      rows.push([
        `(5) ${label}: CPU µs per heartbeat`,
        fmt(hb.cpuUsPerHeartbeat, 2),
        fmt(hs.cpuUsPerHeartbeat, 2),
        fmt(hs.cpuUsPerHeartbeat / hb.cpuUsPerHeartbeat, 2),
      ]);
      rows.push([`(5) ${label}: timers alive`, fmt(hb.timersDuring?.all), fmt(hs.timersDuring?.all), '']);
      rows.push([
        `(5) ${label}: event-loop delay p99 ms`,
        fmt(hb.loopDelayP99Ms),
        fmt(hs.loopDelayP99Ms),
        fmt(hs.loopDelayP99Ms / hb.loopDelayP99Ms, 2),
      ]);
      if (hs.calls !== hb.calls) {
        rows.push([
          `(5) ${label}: heap per open call KiB`,
          fmt(hb.heapPerOpenCallKiB, 2),
          fmt(hs.heapPerOpenCallKiB, 2),
          fmt(hs.heapPerOpenCallKiB / hb.heapPerOpenCallKiB, 2),
        ]);
        rows.push([
          `(5) ${label}: time to start all calls ms`,
          fmt(hb.startMs, 0),
          fmt(hs.startMs, 0),
          fmt(hs.startMs / hb.startMs, 2),
        ]);
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
  }

  if (s.transport) {
    const runs = Object.values<any>(s.transport);
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
  }
  if (s.bullmq) out += renderBullmq(s.bullmq);
  if (s.attack) out += renderAttack(s.attack);
  return out;
}

function renderBullmq(b: any): string {
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

function renderHeartbeat(rows: Record<string, any>): string {
  return table(
    [
      'variant',
      'calls',
      'CPU ms per s',
      'heartbeats per s',
      'per call per s',
      'CPU µs per heartbeat',
      "timers alive (all / ref'd)",
      'event-loop delay p99 ms',
      'ping ms (median)',
      'heap KiB per open call',
    ],
    Object.values<any>(rows).map((v) => [
      v.variant === 'full' ? 'all six, heartbeat()' : 'none (five, no heartbeat)',
      fmt(v.calls, 0),
      fmt(v.cpuMsPerSec),
      fmt(v.heartbeatsPerSec, 0),
      fmt(v.heartbeatsPerCallPerSec, 2),
      fmt(v.cpuUsPerHeartbeat, 2),
      `${fmt(v.timersDuring?.all)} / ${fmt(v.timersDuring?.refed)}`,
      fmt(v.loopDelayP99Ms),
      fmt(v.pingMedianMs, 2),
      fmt(v.heapPerOpenCallKiB, 2),
    ]),
  );
}

function renderProfiles(title: string, profiles: Record<string, any>): string {
  let out = '';
  for (const [k, p] of Object.entries(profiles)) {
    out += `\n<details><summary>${title}: ${k} (${fmt(p.totalMs, 0)} ms sampled)</summary>\n\n`;
    out += table(
      ['self time by package', '%'],
      p.byPackage.map((x: any) => [x.name, fmt(x.percent)]),
    );
    out += '\n';
    out += table(
      ['self time by function', '%'],
      p.byFunction.map((x: any) => [x.name.replace(/\|/g, '\\|'), fmt(x.percent)]),
    );
    out += `\n</details>\n`;
  }
  return out;
}
