/** The Markdown of sections 1–6 (the calls in memory and over stdio), one function a section. */
import { fmt, table } from './report.js';

export const LABEL: Record<string, string> = {
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

export const FLOOD_LABEL: Record<string, string> = {
  bare: 'bare SDK, `sendNotification` per iteration',
  fastmcp: 'fastmcp, `reportProgress` per iteration',
  ours: 'ours: full stack, generator `yield progress()` (throttled, defaults)',
  'ours-ctx': 'ours: full stack, `await ctx.progress()` (throttled, defaults)',
  'ours-delta': 'ours: full stack, `minIntervalMs: 0` (1% delta rule only)',
};

/** (1) Overhead: sequential calls of a trivial tool, in memory. */
export function renderOverhead(o: any): string {
  let out = '';
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
  return out;
}

/** (2) Progress flood over stdio. */
export function renderFlood(f: any): string {
  let out = '';
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
  return out;
}

/** (3) Cancel latency. */
export function renderCancel(cancel: any): string {
  let out = '';
  out += `\n## 3. Cancel latency: \`notifications/cancelled\` arriving at the server → the handler's \`finally\`\n\n`;
  out += table(
    ['handler', 'calls', 'measured', 'cancelled before the handler ran', 'p50 ms', 'p99 ms', 'max ms'],
    Object.entries<any>(cancel).map(([k, v]) => [
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
  return out;
}

/** (4) Mutex: destructive calls on one key. */
export function renderMutex(x: any): string {
  let out = '';
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
  return out;
}

/** (5) Heartbeat: silent calls with progress tokens. */
export function renderHeartbeatSection(heartbeat: any): string {
  let out = '';
  out += `\n## 5. Heartbeat: silent calls with progress tokens, \`silenceMs\` ${Object.values<any>(heartbeat)[0]?.silenceMs}\n\n`;
  const sm = Object.values<any>(heartbeat)[0]?.silenceMs;
  out += `Raw JSON-RPC client in the same process (counts messages only), so the CPU is the server's. "none" is the same stack without heartbeat(). At full speed each silent call gets one heartbeat every ${sm}–${fmt(sm * 1.25, 0)} ms (${fmt(800 / sm, 1)}–${fmt(1000 / sm, 1)} per call per second); fewer means the process could not keep up.\n\n`;
  out += renderHeartbeat(heartbeat);
  const hf = heartbeat.full;
  const hn = heartbeat.none;
  if (hf && hn) {
    out += `\nHeartbeating itself: ${fmt(hf.cpuMsPerSec - hn.cpuMsPerSec)} ms of CPU per second (all six minus none) for ${fmt(hf.heartbeatsPerSec, 0)} heartbeats per second, about ${fmt(((hf.cpuMsPerSec - hn.cpuMsPerSec) * 1000) / hf.heartbeatsPerSec, 1)} µs each.\n`;
  }
  for (const v of Object.values<any>(heartbeat))
    if (v.profile) out += renderProfiles('CPU profile of the heartbeat window', { [v.variant]: v.profile });
  return out;
}

/** (6) Memory: heap after GC. */
export function renderMemory(memory: any): string {
  let out = '';
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
    (memory.runs as any[]).map((v) => [
      v.stack === 'full' ? 'all six middlewares' : 'bare SDK',
      `${v.workload === 'echo' ? 'trivial tool, no token' : '3 progress + 1 log line, with token'}; ${fmt(v.small, 0)} → ${fmt(v.large, 0)} calls`,
      `${fmt(v.heapSmallMiB, 2)} MiB`,
      `${fmt(v.heapLargeMiB, 2)} MiB`,
      `${fmt(v.growthKiB, 1)} KiB`,
      `${fmt(v.secondHalfGrowthKiB, 1)} KiB`,
      fmt(v.bytesPerExtraCall, 2),
    ]),
  );
  const oc = memory.openCalls as Record<string, any> | undefined;
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
  return out;
}

export function renderHeartbeat(rows: Record<string, any>): string {
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

export function renderProfiles(title: string, profiles: Record<string, any>): string {
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
