/**
 * The client process of the HTTP instruction rows (see http-count-server.ts and instructions-http.ts):
 *
 *   node dist/http-count-client.js <url> <2025|2026> <warmup>
 *
 * A real SDK client on one keep-alive connection: SDK 1.x `StreamableHTTPClientTransport` with one
 * 2025-era session, or SDK 2.x pinned to 2026-07-28 (stateless requests). It connects, checks one
 * call, makes `warmup` sequential `tools/call echo`, prints `READY`; then for each stdin line `run N`
 * makes N more and prints `DONE`. It exits when stdin ends. Era `init`: each unit opens a 2025-era session
 * (`initialize`) and ends it (`DELETE`) instead of a call.
 */
import { createInterface } from 'node:readline';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [urlArg, era, warmupArg] = process.argv.slice(2);
const warmup = Number(warmupArg ?? 0);
if (!urlArg || (era !== '2025' && era !== '2026' && era !== 'init') || !Number.isInteger(warmup)) {
  console.error('usage: http-count-client.js <url> <2025|2026|init> <warmup>');
  process.exit(2);
}
const url = new URL(urlArg);
/** A request of a server under callgrind, JIT-compiling at valgrind's speed on a loaded machine, can take minutes (the SDKs' default: 60 s). */
const TIMEOUT_MS = 3_600_000;
type Call = (n: number) => Promise<{ content?: unknown }>;
let call: Call;
if (era === '2025') {
  const client = new Client({ name: 'bench-http', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  call = (n) =>
    client.callTool({ name: 'echo', arguments: { n } }, undefined, { timeout: TIMEOUT_MS }) as Promise<{
      content?: unknown;
    }>;
} else if (era === 'init') {
  // One 2025-era session per unit: `initialize` (answer read to its end), then the session's DELETE.
  // Plain fetch (one keep-alive connection): the SDK client would also open its GET stream.
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  call = async (n) => {
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'bench-http', version: '1.0.0' },
        },
      }),
    });
    const body = await init.text();
    const sid = init.headers.get('mcp-session-id');
    if (init.status !== 200 || !sid || !body.includes('"protocolVersion"'))
      throw new Error(`initialize: ${init.status} ${body}`);
    const end = await fetch(url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' },
    });
    await end.text();
    if (end.status !== 200) throw new Error(`DELETE: ${end.status}`);
    return { content: [{ text: String(n) }] };
  };
} else {
  const client = new ClientV2({ name: 'bench-http', version: '1.0.0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  await client.connect(new TransportV2(url));
  call = (n) =>
    client.callTool({ name: 'echo', arguments: { n } }, { timeout: TIMEOUT_MS } as never) as Promise<{
      content?: unknown;
    }>;
}

const text = (r: { content?: unknown }) => (r.content as Array<{ text?: string }> | undefined)?.[0]?.text;
let seq = 0;
async function calls(n: number): Promise<void> {
  let last: { content?: unknown } | undefined;
  for (let i = 0; i < n; i++) last = await call(seq++);
  if (last && text(last) !== String(seq - 1)) throw new Error(`unexpected result ${JSON.stringify(last)}`);
}

await calls(1);
await calls(warmup);
process.stdout.write('READY\n');
const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (cmd) => {
  const m = /^run (\d+)$/.exec(cmd);
  if (!m) return;
  queue = queue.then(async () => {
    await calls(Number(m[1]));
    process.stdout.write('DONE\n');
  });
});
lines.on('close', () => void queue.then(() => process.exit(0)));
