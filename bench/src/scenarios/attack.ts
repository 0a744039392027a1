/**
 * (10) One client must not starve the others (issue 26). For each attack, a fresh server process
 * (src/attack-server.ts: `@mcp-tether/server`'s stack on `@mcp-tether/http`, every bound at its
 * default, no `authenticate`, so a client is its address), an attacker process
 * (src/attack-client.ts: 127.0.0.1, no principal, as fast as the server answers) and, in this
 * process, a victim: an SDK 1.x client from 127.0.0.2 doing normal work, one operation after
 * another with a short pause, for as long as the attack lasts:
 * - `echo`: a trivial call on its own session, open all along;
 * - `job`: `work { ms: 5 }` (a job tool, answered inline) on that session;
 * - `search`: the rate-limited tool, at most 4 per second (its bucket refills 5 per second);
 * - `session`: a new session (initialize, initialized), one `echo`, DELETE; at most 2 per second.
 * The victim's latency percentiles and refusals are compared with a baseline run with no attacker.
 * The server reports its memory (RSS, heap, array buffers, body bytes being read) now and at its
 * peak, sampled every 20 ms from the start of the attack, the share of a core it used and its
 * event-loop delay. `ATTACK_DEBUG=1`: the victim logs each new session slower than 2 s (by step), the
 * server each event-loop stall over 200 ms.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AttackParams } from '../attack-client.js';
import type { AttackServerOptions } from '../attack-server.js';
import { boundFetch } from '../httpraw.js';
import { percentile, round } from '../util.js';

export type AttackKind = 'sessions' | 'jobs' | 'calls' | 'bodies' | 'events';

export interface AttackScenarioParams {
  /** How long each attack (and the baseline) lasts, ms. */
  durationMs: number;
  attacks: AttackKind[];
  /** Attacker requests in flight (every attack but `bodies` and `jobs`). */
  concurrency: number;
  /** Attacker requests in flight in `jobs`: past the live-job cap (32) at once (an accepted call holds its slot `inlineMs`). */
  jobConcurrency: number;
  bodies: { sockets: number; bodyBytes: number; withheldBytes: number; dropWaitMs: number };
  events: { kib: number; sessions: number };
  server: Omit<AttackServerOptions, 'lifeMs'>;
  /** The victim's pause between two operations, ms. */
  victimPauseMs: number;
}

const fromSource = import.meta.url.endsWith('.ts');
const script = (name: string) => fileURLToPath(new URL(`../${name}.${fromSource ? 'ts' : 'js'}`, import.meta.url));
const loader = fromSource ? ['--import', 'tsx'] : [];
const VICTIM = '127.0.0.2';

/** Lines a child prints on stdout, by their first word. */
function lines(child: ChildProcess): (word: string, timeoutMs: number) => Promise<any> {
  let buf = '';
  const waiting: Array<{ word: string; resolve: (v: any) => void }> = [];
  const seen: string[] = [];
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const i = waiting.findIndex((w) => line.startsWith(`${w.word} `));
      if (i >= 0) waiting.splice(i, 1)[0]!.resolve(line.slice(line.indexOf(' ') + 1));
      else seen.push(line);
    }
  });
  return (word, timeoutMs) => {
    const j = seen.findIndex((l) => l.startsWith(`${word} `));
    if (j >= 0) return Promise.resolve(seen.splice(j, 1)[0]!.slice(word.length + 1));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${word} line within ${timeoutMs} ms`)), timeoutMs);
      const done = (v: string) => {
        clearTimeout(timer);
        resolve(word === 'URL' ? v : JSON.parse(v));
      };
      waiting.push({ word, resolve: done });
      child.once('exit', (code) => reject(new Error(`exited with ${code} before its ${word} line`)));
    });
  };
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.stdin?.end();
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const codeOf = (e: unknown) => {
  const x = e as { code?: number | string; message?: string };
  const http = /HTTP (\d{3})/.exec(x.message ?? '')?.[1];
  return http ? `HTTP ${http}` : String(x.code ?? x.message ?? 'error');
};

class Victim {
  readonly latencies: Record<string, number[]> = { echo: [], job: [], search: [], session: [] };
  readonly refusals: Record<string, number> = {};
  private readonly fetch = boundFetch(VICTIM);
  private client!: Client;
  private transport!: StreamableHTTPClientTransport;

  constructor(private readonly url: URL) {}

  private async connect(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const client = new Client({ name: 'victim', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(this.url, { fetch: this.fetch });
    await client.connect(transport);
    return { client, transport };
  }

  async start(): Promise<void> {
    ({ client: this.client, transport: this.transport } = await this.connect());
  }

  /** One operation: its latency when it succeeded, else a refusal by code. */
  private async op(name: string, f: () => Promise<unknown>): Promise<void> {
    const t = performance.now();
    try {
      const r = (await f()) as { isError?: boolean; structuredContent?: { code?: string; jobId?: string } } | undefined;
      if (r?.isError) throw Object.assign(new Error('isError'), { code: `isError ${r.structuredContent?.code}` });
      if (r?.structuredContent?.jobId) throw Object.assign(new Error('handle'), { code: 'job handle, not inline' });
      this.latencies[name]!.push(performance.now() - t);
    } catch (e) {
      const k = `${name}: ${codeOf(e)}`;
      this.refusals[k] = (this.refusals[k] ?? 0) + 1;
    }
  }

  private async session(n: number): Promise<unknown> {
    const t0 = performance.now();
    const { client, transport } = await this.connect();
    const t1 = performance.now();
    try {
      return await client.callTool({ name: 'echo', arguments: { n } });
    } finally {
      const t2 = performance.now();
      await transport.terminateSession().catch(() => {});
      const t3 = performance.now();
      await client.close();
      const t4 = performance.now();
      if (process.env.ATTACK_DEBUG && t4 - t0 > 2000)
        process.stderr.write(
          `[victim] slow session: connect ${Math.round(t1 - t0)} call ${Math.round(t2 - t1)} delete ${Math.round(t3 - t2)} close ${Math.round(t4 - t3)}\n`,
        );
    }
  }

  /** Normal work until `ms` passed. */
  async work(ms: number, pauseMs: number): Promise<void> {
    const end = performance.now() + ms;
    let lastSearch = -Infinity;
    let lastSession = -Infinity;
    for (let n = 0; performance.now() < end; n++) {
      await this.op('echo', () => this.client.callTool({ name: 'echo', arguments: { n } }));
      await this.op('job', () => this.client.callTool({ name: 'work', arguments: { ms: 5 } }));
      if (performance.now() - lastSearch >= 250) {
        lastSearch = performance.now();
        await this.op('search', () => this.client.callTool({ name: 'search', arguments: { q: String(n) } }));
      }
      if (performance.now() - lastSession >= 500) {
        lastSession = performance.now();
        await this.op('session', () => this.session(n));
      }
      await sleep(pauseMs);
    }
  }

  summary() {
    const pct = (xs: number[]) => ({
      n: xs.length,
      p50Ms: round(percentile(xs, 50), 1),
      p99Ms: round(percentile(xs, 99), 1),
    });
    const all = Object.values(this.latencies).flat();
    return {
      ops: Object.fromEntries(Object.entries(this.latencies).map(([k, v]) => [k, pct(v)])),
      all: pct(all),
      refused: Object.values(this.refusals).reduce((a, b) => a + b, 0),
      refusals: this.refusals,
    };
  }

  async close(): Promise<void> {
    await this.transport.terminateSession().catch(() => {});
    await this.client.close();
  }
}

function attackerParams(p: AttackScenarioParams, kind: AttackKind): AttackParams {
  const base = { durationMs: p.durationMs, concurrency: p.concurrency };
  if (kind === 'bodies') return { ...base, ...p.bodies };
  if (kind === 'events') return { ...base, ...p.events };
  if (kind === 'jobs') return { ...base, concurrency: p.jobConcurrency };
  return base;
}

async function phase(p: AttackScenarioParams, kind: AttackKind | 'baseline') {
  const lifeMs = 3 * p.durationMs + p.bodies.dropWaitMs + 60_000;
  const server = spawn(
    process.execPath,
    ['--expose-gc', ...loader, script('attack-server'), JSON.stringify({ ...p.server, lifeMs })],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let attacker: ChildProcess | undefined;
  let victim: Victim | undefined;
  try {
    const fromServer = lines(server);
    const url = new URL(await fromServer('URL', 30_000));
    // Warm up (JIT, connections) with a victim whose numbers are not kept.
    const warm = new Victim(url);
    await warm.start();
    await warm.work(Math.min(1_000, p.durationMs / 3), p.victimPauseMs);
    await warm.close();
    victim = new Victim(url);
    await victim.start();
    server.stdin!.write('mark\n');
    const base = await fromServer('MARK', 30_000);
    let result: Promise<any> | undefined;
    const t0 = performance.now();
    if (kind !== 'baseline') {
      attacker = spawn(
        process.execPath,
        [...loader, script('attack-client'), kind, url.href, JSON.stringify(attackerParams(p, kind))],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      result = lines(attacker)('RESULT', lifeMs);
    }
    await victim.work(p.durationMs, p.victimPauseMs);
    const victimMs = performance.now() - t0;
    const attack = await result;
    server.stdin!.write('stats\n');
    const stats = await fromServer('STATS', 30_000);
    const mib = (x: number) => round(x / 2 ** 20, 1);
    return {
      kind,
      victimMs: round(victimMs, 0),
      victim: victim.summary(),
      ...(attack ? { attacker: attack } : {}),
      server: {
        baseRssMiB: mib(base.rss),
        peakRssMiB: mib(stats.peak.rss),
        peakHeapMiB: mib(stats.peak.heapUsed),
        peakArrayBuffersMiB: mib(stats.peak.arrayBuffers),
        peakBodyBytesInFlightMiB: mib(stats.peak.bodyBytesInFlight),
        rssAfterMiB: mib(stats.now.rss),
        heapAfterGcMiB: mib(stats.afterGc.heapUsed),
        cpuShare: round(stats.cpu, 2),
        loopDelayMs: {
          p50: round(stats.loopDelayMs.p50, 1),
          p99: round(stats.loopDelayMs.p99, 1),
          max: round(stats.loopDelayMs.max, 0),
        },
        front: stats.front,
        limiter: stats.limiter,
      },
    };
  } finally {
    await victim?.close().catch(() => {});
    if (attacker) await stop(attacker);
    await stop(server);
  }
}

export async function run(p: AttackScenarioParams) {
  const phases: Record<string, any> = {};
  for (const kind of ['baseline', ...p.attacks] as const) {
    process.stderr.write(`[attack] ${kind}\n`);
    phases[kind] = await phase(p, kind);
  }
  const b = phases.baseline.victim.all;
  for (const k of p.attacks) {
    const v = phases[k].victim.all;
    phases[k].victimP99OverBaseline = round(v.p99Ms / b.p99Ms, 2);
  }
  // @mcp-tether/http's documented defaults, where the params leave them.
  const bounds = {
    bodyTimeoutMs: p.server.http?.bodyTimeoutMs ?? 10_000,
    maxBodyBytesInFlightMiB: 64,
    maxClientBodyBytesInFlightMiB: 16,
    maxSessionsPerClient: 100,
    // 0: the bound off (Infinity), see AttackServerOptions.http.
    maxClientRequestsInFlight: p.server.http?.maxClientRequestsInFlight ?? 32,
    maxLivePerClient: 32,
  };
  return { params: p, bounds, phases };
}
