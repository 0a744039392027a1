/**
 * (1) over real transports: the trivial `echo` call through a server in a child process
 * (src/transport-server.ts), over stdio, Streamable HTTP on 127.0.0.1 stateful (SDK 1.x, 2025 era)
 * and stateless (SDK 2.x `createMcpHandler`, 2026-07-28). The load generator is this process: the SDK
 * client in a sequential loop (stdio, HTTP 2025), or one `fetch` POST per call with the 2026-07-28
 * envelope (HTTP 2026: no session, nothing to initialize), bounded by a call count and a time limit.
 * Per stack: wall time per call (client side), client CPU per call, and server CPU per call (the
 * server's own `process.cpuUsage()` through its `cpu` tool, before and after). Each stack gets a
 * fresh server process per round; rounds rotate the order; ratios to bare are taken within a round.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { median, round } from '../util.js';

export interface TransportParams {
  transport: 'stdio' | 'http-2025' | 'http-2026';
  stacks: string[];
  calls: number;
  warmup: number;
  rounds: number;
  /** Longest a stack's measured loop may run, ms (the count is cut short past it, and the report says so). */
  maxMs: number;
}

const fromSource = import.meta.url.endsWith('.ts');
const serverScript = fileURLToPath(
  new URL(fromSource ? '../transport-server.ts' : '../transport-server.js', import.meta.url),
);
const nodeArgs = (transport: string, stack: string) => [
  ...(fromSource ? ['--import', 'tsx'] : []),
  serverScript,
  transport,
  stack,
];

interface Session {
  call(n: number): Promise<string>;
  serverCpuMs(): Promise<number>;
  close(): Promise<void>;
}

const textOf = (r: unknown) => ((r as { content?: Array<{ text?: string }> }).content?.[0]?.text ?? '') as string;
const cpuOf = (text: string) => {
  const c = JSON.parse(text) as { user: number; system: number };
  return (c.user + c.system) / 1000;
};

async function sdkSession(client: Client, close: () => Promise<void>): Promise<Session> {
  return {
    call: async (n) => textOf(await client.callTool({ name: 'echo', arguments: { n } })),
    serverCpuMs: async () => cpuOf(textOf(await client.callTool({ name: 'cpu', arguments: {} }))),
    close,
  };
}

/** Start an HTTP server child; resolve with its URL (printed on its stdout) and the process. */
function startHttpChild(transport: string, stack: string): Promise<{ url: URL; child: ChildProcess }> {
  const child = spawn(process.execPath, nodeArgs(transport, stack), { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${transport} ${stack}: no URL within 30 s`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const m = /^URL (\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: new URL(m[1]!), child });
      }
    });
    child.on('exit', (code) => reject(new Error(`${transport} ${stack}: server exited with ${code}`)));
  });
}

const stopChild = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.stdin?.end();
  });

async function open(transport: TransportParams['transport'], stack: string): Promise<Session> {
  if (transport === 'stdio') {
    const t = new StdioClientTransport({
      command: process.execPath,
      args: nodeArgs(transport, stack),
      stderr: 'inherit',
    });
    const client = new Client({ name: 'bench-client', version: '1.0.0' });
    await client.connect(t);
    return sdkSession(client, () => client.close());
  }
  const { url, child } = await startHttpChild(transport, stack);
  if (transport === 'http-2025') {
    const client = new Client({ name: 'bench-client', version: '1.0.0' });
    const t = new StreamableHTTPClientTransport(url);
    await client.connect(t);
    return sdkSession(client, async () => {
      await t.terminateSession().catch(() => {});
      await client.close();
      await stopChild(child);
    });
  }
  // 2026-07-28: one POST per call, the envelope in `_meta`, the standard headers.
  let id = 0;
  const post = async (name: string, args: Record<string, unknown>) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': name,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++id,
        method: 'tools/call',
        params: {
          name,
          arguments: args,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'bench-client', version: '1.0.0' },
          },
        },
      }),
    });
    // A JSON response, or an SSE stream whose last `data:` line is the response.
    const text = await res.text();
    const json = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? (text
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .pop()
          ?.slice(5) ?? '{}')
      : text;
    const body = JSON.parse(json) as { result?: unknown; error?: { message: string } };
    if (!body.result) throw new Error(`http-2026 ${stack}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    return textOf(body.result);
  };
  return {
    call: (n) => post('echo', { n }),
    serverCpuMs: async () => cpuOf(await post('cpu', {})),
    close: () => stopChild(child),
  };
}

async function measure(p: TransportParams, stack: string) {
  const s = await open(p.transport, stack);
  try {
    for (let i = 0; i < p.warmup; i++) await s.call(i);
    const s0 = await s.serverCpuMs();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    let n = 0;
    for (; n < p.calls; n++) {
      if ((await s.call(n)) !== String(n)) throw new Error(`${p.transport} ${stack}: wrong result for ${n}`);
      if ((n & 63) === 63 && performance.now() - t0 > p.maxMs) {
        n++;
        break;
      }
    }
    const wallMs = performance.now() - t0;
    const c = process.cpuUsage(c0);
    const s1 = await s.serverCpuMs();
    return {
      calls: n,
      usPerCall: round((wallMs * 1000) / n, 1),
      clientCpuUsPerCall: round((c.user + c.system) / n, 1),
      serverCpuUsPerCall: round(((s1 - s0) * 1000) / n, 1),
    };
  } finally {
    await s.close();
  }
}

export async function run(p: TransportParams) {
  const rounds: Array<Record<string, Awaited<ReturnType<typeof measure>>>> = [];
  for (let r = 0; r < p.rounds; r++) {
    const order = p.stacks.map((_, i) => p.stacks[(i + r) % p.stacks.length]!);
    const row: Record<string, Awaited<ReturnType<typeof measure>>> = {};
    for (const stack of order) row[stack] = await measure(p, stack);
    rounds.push(row);
  }
  const stacks: Record<string, unknown> = {};
  for (const stack of p.stacks) {
    const rows = rounds.map((r) => r[stack]!);
    const ratio = (f: (x: (typeof rows)[number]) => number) =>
      round(median(rounds.map((r) => f(r[stack]!) / f(r.bare!))), 3);
    stacks[stack] = {
      calls: median(rows.map((x) => x.calls)),
      usPerCall: round(median(rows.map((x) => x.usPerCall)), 1),
      clientCpuUsPerCall: round(median(rows.map((x) => x.clientCpuUsPerCall)), 1),
      serverCpuUsPerCall: round(median(rows.map((x) => x.serverCpuUsPerCall)), 1),
      overBareTime: ratio((x) => x.usPerCall),
      overBareServerCpu: ratio((x) => x.serverCpuUsPerCall),
      overBareTotalCpu: ratio((x) => x.serverCpuUsPerCall + x.clientCpuUsPerCall),
    };
  }
  return { transport: p.transport, rounds: p.rounds, warmup: p.warmup, maxMs: p.maxMs, stacks, perRound: rounds };
}
