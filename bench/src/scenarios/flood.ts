/**
 * (2) Progress flood: one `tools/call` whose handler reports progress on each of `n` iterations,
 * with a progress token, over stdio. The server runs in a child process (src/flood-server.ts), so
 * `process.cpuUsage()` here is the client's CPU alone; the server reports its own through a `cpu`
 * tool called before and after. Notifications are counted on the client's transport (the wire).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { fileURLToPath } from 'node:url';
import { round } from '../util.js';

export interface FloodParams {
  kind: string;
  n: number;
}

// From dist/ (the normal run) the server is plain JS; from src/ (development, under tsx) it is TS.
const fromSource = import.meta.url.endsWith('.ts');
const serverScript = fileURLToPath(new URL(fromSource ? '../flood-server.ts' : '../flood-server.js', import.meta.url));

async function serverCpu(client: Client): Promise<number> {
  const r = (await client.callTool({ name: 'cpu', arguments: {} })) as { content: Array<{ text: string }> };
  const c = JSON.parse(r.content[0]!.text) as { user: number; system: number };
  return (c.user + c.system) / 1000;
}

export async function run(p: FloodParams) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...(fromSource ? ['--import', 'tsx'] : []), serverScript, p.kind],
    stderr: 'inherit',
  });
  const client = new Client({ name: 'bench-client', version: '1.0.0' });
  let wire = 0;
  let wireBytes = 0;
  let counting = false;
  await client.connect(transport);
  // Count notifications as they come off the wire, before the SDK client parses them.
  const inner = transport.onmessage;
  transport.onmessage = (message) => {
    if (counting && (message as { method?: string }).method === 'notifications/progress') {
      wire++;
      wireBytes += JSON.stringify(message).length + 1;
    }
    inner?.(message);
  };
  // Warm the server up (JIT) with a short flood, then measure.
  let seen = 0;
  let last = 0;
  await client.callTool({ name: 'flood', arguments: { n: Math.min(1000, p.n) } }, CallToolResultSchema, {
    onprogress: () => {},
    timeout: 600_000,
  });
  const s0 = await serverCpu(client);
  counting = true;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const result = (await client.callTool({ name: 'flood', arguments: { n: p.n } }, CallToolResultSchema, {
    onprogress: (pr) => {
      seen++;
      last = pr.progress;
    },
    timeout: 600_000,
  })) as { content: Array<{ text: string }> };
  const wallMs = performance.now() - t0;
  const c = process.cpuUsage(c0);
  counting = false;
  const s1 = await serverCpu(client);
  if (result.content[0]?.text !== String(p.n))
    throw new Error(`${p.kind}: unexpected result ${JSON.stringify(result)}`);
  await client.close();
  return {
    kind: p.kind,
    iterations: p.n,
    notifications: wire,
    seenByClient: seen,
    lastProgress: last,
    wireKiB: round(wireBytes / 1024, 1),
    wallMs: round(wallMs, 1),
    clientCpuMs: round((c.user + c.system) / 1000, 1),
    serverCpuMs: round(s1 - s0, 1),
  };
}
