/**
 * The attacker of (10) attacks, a child process of scenarios/attack.ts:
 * `node dist/attack-client.js <kind> <url> '<params json>'`. One client: no principal, one address
 * (127.0.0.1), plain node:http, as fast as the server answers (`concurrency` requests in flight),
 * for `durationMs`; then it stops starting work, waits for what is in flight, and prints
 * `RESULT <json>`: requests made and their outcomes by code (`ok`, `HTTP 429 BUSY`, `-32029
 * RATE_LIMITED`, `isError BUSY`, `network ECONNRESET`, ...), plus what each attack measures.
 *
 * Kinds:
 * - `sessions`: opens 2025-era sessions (initialize + initialized) without pause, past its cap, and
 *   keeps the open ones busy with `ping`s.
 * - `jobs`: starts `work { ms: 600000 }` (a job that outlives the attack) without pause on one session.
 * - `calls`: calls the rate-limited `search` without pause on one session.
 * - `bodies`: `sockets` connections, each a POST declaring `bodyBytes` and sending all but the last
 *   `withheldBytes`; a dropped one is replaced while the attack lasts. Reports, per dropped socket,
 *   its answer's status and how long after its last byte was written it was dropped.
 * - `events`: one `fill` job (`kib` KiB of partial output), then as many sessions as it may open,
 *   each re-reading `job://{id}/partial` without pause (every answer lands in its session's event store).
 */
import { connect } from 'node:net';
import { RawHttp } from './httpraw.js';
import { percentile, round } from './util.js';

export interface AttackParams {
  durationMs: number;
  concurrency: number;
  /** bodies: connections held at once, declared body size, bytes withheld, longest wait for the last to drop (ms). */
  sockets?: number;
  bodyBytes?: number;
  withheldBytes?: number;
  dropWaitMs?: number;
  /** events: partial output of the job, KiB; sessions to re-read it on (at most). */
  kib?: number;
  sessions?: number;
}

const [kind, urlText, paramsJson] = process.argv.slice(2);
const url = new URL(urlText ?? '');
const p = JSON.parse(paramsJson ?? '{}') as AttackParams;
const http = new RawHttp(url, '127.0.0.1', Math.max(64, p.concurrency * 2));
const outcomes: Record<string, number> = {};
let requests = 0;
const count = (o: string) => {
  requests++;
  outcomes[o] = (outcomes[o] ?? 0) + 1;
};
const netCode = (e: unknown) => `network ${(e as { code?: string }).code ?? (e as Error).message}`;
const t0 = performance.now();
const deadline = t0 + p.durationMs;
const running = () => performance.now() < deadline;

/** `concurrency` loops of `step` until the deadline. */
async function flood(step: () => Promise<string>, concurrency = p.concurrency): Promise<void> {
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (running()) {
        try {
          count(await step());
        } catch (e) {
          count(netCode(e));
        }
      }
    }),
  );
}

async function session(): Promise<string> {
  const s = await http.open();
  if ('refused' in s) throw new Error(`could not open a session: ${s.refused}`);
  return s.sessionId;
}

async function sessions(): Promise<object> {
  const open: string[] = [];
  let next = 0;
  const pinger = async () => {
    while (running()) {
      const sid = open[next++ % Math.max(1, open.length)];
      if (sid === undefined) {
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      const { outcome } = await http.call('ping', {}, sid).catch((e: unknown) => ({ outcome: netCode(e) }));
      count(`ping ${outcome}`);
    }
  };
  await Promise.all([
    flood(async () => {
      const s = await http.open();
      if ('refused' in s) return `initialize ${s.refused}`;
      open.push(s.sessionId);
      return 'initialize ok';
    }),
    pinger(),
    pinger(),
  ]);
  return { sessionsHeld: open.length };
}

async function jobs(): Promise<object> {
  const sid = await session();
  await flood(async () => (await http.call('tools/call', { name: 'work', arguments: { ms: 600_000 } }, sid)).outcome);
  return {};
}

async function calls(): Promise<object> {
  const sid = await session();
  await flood(async () => (await http.call('tools/call', { name: 'search', arguments: { q: 'x' } }, sid)).outcome);
  return {};
}

async function events(): Promise<object> {
  const first = await session();
  const { answer, outcome } = await http.call(
    'tools/call',
    { name: 'fill', arguments: { kib: p.kib ?? 256, holdMs: 600_000 } },
    first,
  );
  const jobId = answer.messages[0]?.result?.structuredContent?.jobId as string | undefined;
  if (!jobId) throw new Error(`fill: no job handle (${outcome})`);
  const sids = [first];
  while (sids.length < (p.sessions ?? 100) && running()) {
    const s = await http.open();
    if ('refused' in s) break;
    sids.push(s.sessionId);
  }
  let i = 0;
  let bytes = 0;
  await flood(async () => {
    const { answer: a, outcome: o } = await http.call(
      'resources/read',
      { uri: `job://${jobId}/partial` },
      sids[i++ % sids.length],
    );
    bytes += (a.messages[0]?.result?.contents?.[0]?.text?.length as number | undefined) ?? 0;
    return o;
  });
  return { sessionsUsed: sids.length, partialKiB: p.kib, readMiB: round(bytes / 2 ** 20, 1) };
}

async function bodies(): Promise<object> {
  const total = p.bodyBytes ?? 4 * 2 ** 20;
  const withheld = p.withheldBytes ?? 1024;
  // One buffer for every socket: a write keeps a reference, no copy.
  const body = Buffer.alloc(total - withheld, 0x20);
  const head =
    `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nContent-Length: ${total}\r\n\r\n`;
  const dropped: Array<{ status: string; sinceLastByteMs?: number; sinceOpenMs: number }> = [];
  let neverFlushed = 0;
  let connections = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      connections++;
      const opened = performance.now();
      let lastByteAt: number | undefined;
      let status = 'none';
      const s = connect({ host: url.hostname, port: Number(url.port), localAddress: '127.0.0.1' });
      s.on('error', (e) => {
        if (status === 'none') status = netCode(e);
      });
      s.once('data', (d: Buffer) => {
        status = `HTTP ${/^HTTP\/1\.1 (\d+)/.exec(d.toString('latin1'))?.[1] ?? '?'}`;
      });
      s.on('close', () => {
        const at = performance.now();
        if (lastByteAt === undefined) neverFlushed++;
        dropped.push({
          status,
          sinceOpenMs: at - opened,
          ...(lastByteAt !== undefined ? { sinceLastByteMs: at - lastByteAt } : {}),
        });
        count(status);
        resolve();
      });
      s.write(head);
      s.write(body, (err) => {
        if (!err) lastByteAt = performance.now();
      });
    });
  const waitEnd = deadline + (p.dropWaitMs ?? 30_000);
  await Promise.race([
    Promise.all(
      Array.from({ length: p.sockets ?? 400 }, async () => {
        while (running()) await one();
      }),
    ),
    new Promise((r) => setTimeout(r, waitEnd - performance.now()).unref()),
  ]);
  const since = dropped.map((d) => d.sinceLastByteMs).filter((x): x is number => x !== undefined);
  const byStatus: Record<string, number[]> = {};
  for (const d of dropped) {
    byStatus[d.status] ??= [];
    byStatus[d.status]!.push(d.sinceLastByteMs ?? d.sinceOpenMs);
  }
  return {
    sockets: p.sockets ?? 400,
    connections,
    bodyBytes: total,
    withheldBytes: withheld,
    dropped: dropped.length,
    stillOpenAtEnd: connections - dropped.length,
    neverFlushed,
    dropAfterLastByteMs: {
      p50: round(percentile(since, 50), 0),
      p99: round(percentile(since, 99), 0),
      max: round(Math.max(...since), 0),
    },
    dropAfterOpenMaxMs: round(Math.max(...dropped.map((d) => d.sinceOpenMs)), 0),
    dropByStatus: Object.fromEntries(
      Object.entries(byStatus).map(([k, v]) => [
        k,
        { n: v.length, p50Ms: round(percentile(v, 50), 0), maxMs: round(Math.max(...v), 0) },
      ]),
    ),
  };
}

const KINDS: Record<string, () => Promise<object>> = { sessions, jobs, calls, bodies, events };
const attack = KINDS[kind ?? ''];
if (!attack) {
  console.error(`usage: attack-client.js <${Object.keys(KINDS).join('|')}> <url> '<params json>'`);
  process.exit(2);
}
const extra = await attack();
const wallMs = performance.now() - t0;
http.close();
process.stdout.write(
  `RESULT ${JSON.stringify({ kind, requests, perSec: round(requests / (wallMs / 1000), 0), outcomes, ...extra, wallMs: round(wallMs, 0) })}\n`,
);
process.exit(0);
