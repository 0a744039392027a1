/** (10) attacks: the Markdown tables and the targets (issue 26's "Done when"). */
import { fmt, type Target, table } from './report.js';

const KINDS = ['sessions', 'jobs', 'calls', 'bodies', 'events'] as const;

function attackerWhat(a: any, kind: string): string {
  const p = a.params;
  switch (kind) {
    case 'sessions':
      return `opens 2025-era sessions (${p.concurrency} at a time) and pings the open ones`;
    case 'jobs':
      return `starts 10-minute jobs (${p.jobConcurrency} calls in flight)`;
    case 'calls':
      return `calls the rate-limited tool (${p.concurrency} in flight; bucket ${p.server.search.burst}, ${p.server.search.perSecond}/s)`;
    case 'bodies':
      return `${p.bodies.sockets} sockets, each a ${fmt(p.bodies.bodyBytes / 2 ** 20)} MiB body minus ${fmt(p.bodies.withheldBytes / 1024)} KiB, replaced when dropped`;
    case 'events':
      return `re-reads a ${p.events.kib} KiB partial output on up to ${p.events.sessions} sessions (${p.concurrency} in flight)`;
    default:
      return 'none';
  }
}

const outcomes = (o: Record<string, number> | undefined) =>
  o
    ? Object.entries(o)
        .sort((x, y) => y[1] - x[1])
        .map(([k, n]) => `${k}: ${fmt(n, 0)}`)
        .join(', ')
    : '–';

const refusals = (r: Record<string, number>) =>
  Object.keys(r).length
    ? Object.entries(r)
        .map(([k, n]) => `${k} ×${n}`)
        .join(', ')
    : '0';

/** The per-client bound on requests in flight the run used (absent from runs before it existed). */
const inFlight = (b: any) =>
  b.maxClientRequestsInFlight === undefined
    ? ''
    : b.maxClientRequestsInFlight === 0
      ? ' but requests in flight per client unbounded'
      : ` (${b.maxClientRequestsInFlight} requests in flight per client)`;

export function renderAttack(a: any): string {
  const p = a.params;
  const ph = a.phases as Record<string, any>;
  const b = a.bounds;
  let out = `\n## 10. Attacks: one client at full speed beside another (issue 26)\n\n`;
  out += `Per run a fresh server process (\`@mcp-tether/server\` on \`@mcp-tether/http\`, every bound at its default${inFlight(b)}, \`@mcp-tether/ratelimit\` on one tool, no \`authenticate\`: a client is its address), an attacker process (127.0.0.1, no principal, as fast as the server answers, ${fmt(p.durationMs / 1000)} s) and a victim in the bench process: an SDK 1.x client from 127.0.0.2 doing normal work one operation after another, ${p.victimPauseMs} ms apart (a call, a 5 ms job, the rate-limited tool at most 4/s, a new session with one call at most 2/s). Victim latency counts successful operations; a refusal is any error, \`isError\` result or job handle where the inline answer was due. Server memory is sampled every 20 ms from the start of the attack; its CPU (share of one core) and event-loop delay are over the attack.\n\n`;
  const runs = ['baseline', ...KINDS.filter((k) => ph[k])];
  out += table(
    [
      'run',
      'attacker',
      'attacker requests (/s)',
      'attacker outcomes',
      'victim ops',
      'victim p50 ms',
      'victim p99 ms',
      'p99 × baseline',
      'victim refusals',
      'server CPU (cores)',
      'server event-loop delay p99 ms',
      'server RSS MiB: start → peak',
      'server heap after GC at the end, MiB',
    ],
    runs.map((k) => {
      const r = ph[k];
      const at = r.attacker;
      return [
        k,
        attackerWhat(a, k),
        at ? `${fmt(at.requests, 0)} (${fmt(at.perSec, 0)})` : '–',
        outcomes(at?.outcomes),
        fmt(r.victim.all.n, 0),
        fmt(r.victim.all.p50Ms),
        fmt(r.victim.all.p99Ms),
        k === 'baseline' ? '1' : fmt(r.victimP99OverBaseline, 2),
        refusals(r.victim.refusals),
        fmt(r.server.cpuShare, 2),
        fmt(r.server.loopDelayMs?.p99, 0),
        `${fmt(r.server.baseRssMiB)} → ${fmt(r.server.peakRssMiB)}`,
        fmt(r.server.heapAfterGcMiB),
      ];
    }),
  );
  out += `\nThe victim's operations, p50 / p99 ms:\n\n`;
  const op = (r: any, k: string) => {
    const o = r.victim.ops[k];
    return o?.n ? `${fmt(o.p50Ms)} / ${fmt(o.p99Ms)} (${o.n})` : '–';
  };
  out += table(
    ['run', 'call', '5 ms job', 'rate-limited tool', 'new session + call + DELETE'],
    runs.map((k) => [k, op(ph[k], 'echo'), op(ph[k], 'job'), op(ph[k], 'search'), op(ph[k], 'session')]),
  );
  const bodies = ph.bodies;
  if (bodies?.attacker) {
    const at = bodies.attacker;
    const s = bodies.server;
    out += `\nWithheld bodies (body timeout ${fmt(b.bodyTimeoutMs, 0)} ms; bounds: ${b.maxBodyBytesInFlightMiB} MiB of bodies being read, ${b.maxClientBodyBytesInFlightMiB} MiB per client):\n\n`;
    out += table(
      [
        'sockets',
        'connections',
        'answers',
        'dropped after the last byte written: p50 / p99 / max ms',
        'after connecting: max ms',
        'still open at the end',
        'body bytes being read, peak MiB',
        'array buffers, peak MiB',
        'heap, peak MiB',
        'RSS MiB: start → peak',
      ],
      [
        [
          fmt(at.sockets, 0),
          fmt(at.connections, 0),
          outcomes(at.outcomes),
          `${fmt(at.dropAfterLastByteMs.p50, 0)} / ${fmt(at.dropAfterLastByteMs.p99, 0)} / ${fmt(at.dropAfterLastByteMs.max, 0)}`,
          fmt(at.dropAfterOpenMaxMs, 0),
          fmt(at.stillOpenAtEnd, 0),
          fmt(s.peakBodyBytesInFlightMiB),
          fmt(s.peakArrayBuffersMiB),
          fmt(s.peakHeapMiB),
          `${fmt(s.baseRssMiB)} → ${fmt(s.peakRssMiB)}`,
        ],
      ],
    );
  }
  return out;
}

/** 10a: the victim is never refused; 10b, 10c: the withheld bodies' memory and how soon they are dropped. */
export function attackTargets(a: any): Target[] {
  if (!a?.phases) return [];
  const ph = a.phases as Record<string, any>;
  const t: Target[] = [];
  const attacked = KINDS.filter((k) => ph[k]);
  if (attacked.length)
    t.push({
      id: '10a',
      what: `attacks: the victim's refusals beside each attacker (${attacked.join(', ')})`,
      target: '0',
      value: attacked.map((k) => `${k} ${ph[k].victim.refused}`).join(', '),
      met: attacked.every((k) => ph[k].victim.refused === 0),
    });
  const bodies = ph.bodies;
  if (bodies?.attacker) {
    const s = bodies.server;
    t.push({
      id: '10b',
      what: `attacks: request body bytes held during ${bodies.attacker.sockets} withheld bodies`,
      target: `<= ${a.bounds.maxBodyBytesInFlightMiB} MiB`,
      value: `${fmt(s.peakBodyBytesInFlightMiB)} MiB being read (RSS ${fmt(s.baseRssMiB)} → ${fmt(s.peakRssMiB)} MiB)`,
      met: s.peakBodyBytesInFlightMiB <= a.bounds.maxBodyBytesInFlightMiB,
    });
    // Timed from the attacker's last write: the server's timer starts at the last byte it read,
    // later when it reads slowly (a loaded machine), so the median is the measure; the max is shown.
    const d = bodies.attacker.dropAfterLastByteMs;
    const limit = 1.2 * a.bounds.bodyTimeoutMs;
    t.push({
      id: '10c',
      what: `attacks: withheld bodies dropped after their last byte was written (body timeout ${fmt(a.bounds.bodyTimeoutMs, 0)} ms)`,
      target: `all closed; median <= ${fmt(limit, 0)} ms (timeout + 20 %)`,
      value: `${bodies.attacker.stillOpenAtEnd} still open; median ${fmt(d.p50, 0)} ms, max ${fmt(d.max, 0)} ms`,
      met: d.p50 <= limit && bodies.attacker.stillOpenAtEnd === 0,
    });
  }
  return t;
}
