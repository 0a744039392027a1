/**
 * The server process of the HTTP instruction rows (`--instructions --http`, see instructions-http.ts):
 *
 *   node [V8 flags of instructions.ts] dist/http-count-server.js <server> [tools=11]
 *
 * Serves one of {@link HTTP_SERVERS} on 127.0.0.1 (a free port; prints `URL <url>` on stdout) with
 * `tools` registered tools (`echo { n }` and `tools - 1` others of the same shape; every zod schema is
 * built once, outside the factories, as the http README advises), and takes its window commands as
 * SIGUSR2 signals (the first, second and third), answered on stdout:
 *
 * - 1st, `gc`: a scavenge (settling between warm-up phases) → `OK`
 * - 2nd, `start`: a scavenge (an empty young generation), heap statistics, a GC profiler, then
 *   `CG_START_SO` (callgrind's instrumentation on, see instructions/cg_start.c) and
 *   `process.getegid()`, the window's start marker (`--dump-before=getegid`) → `STARTED`
 * - 3rd, `end`: `process.getegid()` first (the end marker), then → `RESULT {...}`: GCs in the window (must
 *   be none), bytes allocated and surviving over it, the server's CPU and wall time over it (µs).
 *
 * The requests are sent by a client in another process (http-count-client.ts); the window counts
 * this process alone. It exits after `end`. Timers are left as a user would have them.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeSync } from 'node:fs';
import { GCProfiler, getHeapStatistics } from 'node:v8';
import { type AttachOptions, type Middleware, tether, toolTable } from '@mcp-tether/core';
import { createMcpHttp } from '@mcp-tether/http';
import { serveHttp } from '@mcp-tether/testing';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { echoResult, fullStack, INFO } from './servers.js';

/** The servers, by name: the SDKs' own (references), the front with 0, core, or six middlewares, and the preset (`createApp`). */
export const HTTP_SERVERS = [
  'sdk',
  'sdk-json',
  'sdk2',
  'front',
  'front-core',
  'front-core-table',
  'front-full-noctx',
  'front-full',
  'preset',
] as const;
export type HttpServerName = (typeof HTTP_SERVERS)[number];

const [name, toolsArg] = process.argv.slice(2) as [HttpServerName, string | undefined];
const tools = toolsArg === undefined ? 11 : Number(toolsArg);
if (!HTTP_SERVERS.includes(name) || !Number.isInteger(tools) || tools < 1) {
  console.error(`usage: http-count-server.js <${HTTP_SERVERS.join('|')}> [tools=11]`);
  process.exit(2);
}

// Built once: the schemas (v1 takes a raw shape, v2 a zod object) and the middleware instances,
// shared by every server of the process as the middlewares' READMEs ask.
const shape = { n: z.number() };
const object = z.object(shape);
const middlewares: Middleware[] | undefined =
  name === 'front-core' || name === 'front-core-table' ? [] : name.startsWith('front-full') ? fullStack() : undefined;
const attach: AttachOptions | undefined = name === 'front-full-noctx' ? { asyncContext: false } : undefined;

function register(server: McpServerV1 | McpServerV2): void {
  const v2 = server instanceof McpServerV2;
  const s = server as unknown as McpServerV1;
  const schema = (v2 ? object : shape) as typeof shape;
  s.registerTool('echo', { inputSchema: schema }, async ({ n }) => echoResult(n));
  for (let i = 1; i < tools; i++) s.registerTool(`tool${i}`, { inputSchema: schema }, async ({ n }) => echoResult(n));
}
// `front-core-table`: the tools registered once, in a tool table (core's toolTable), installed per server.
const table = name === 'front-core-table' ? toolTable(register) : undefined;

function withTools<S extends McpServerV1 | McpServerV2>(server: S): S {
  if (middlewares) tether(server, middlewares, attach);
  if (table) table.install(server);
  else register(server);
  return server;
}
const legacy = () => withTools(new McpServerV1(INFO));
const modern = () => withTools(new McpServerV2(INFO));

async function listen(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const http = createServer(handle);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

let url: string;
if (name === 'sdk' || name === 'sdk-json') {
  // The SDK 1.x node transport, one server per session (the core test kit's harness, as the transport rows).
  url = (await serveHttp(legacy, { stateful: true, enableJsonResponse: name === 'sdk-json' })).url.href;
} else if (name === 'sdk2') {
  // The SDK 2.x stateless handler on node:http through the SDK's own adapter (`@modelcontextprotocol/node`).
  const handler = toNodeHandler(createMcpHandler(modern, { onerror: () => {} } as never));
  url = await listen((req, res) => void handler(req, res));
} else if (name === 'preset') {
  // @mcp-tether/server's createApp (its own stack and factories), tools registered once with app.tool.
  const { createApp } = await import('@mcp-tether/server');
  const app = createApp({ ...INFO, log: false, handleSignals: false });
  app.tool('echo', { inputSchema: object }, async ({ n }) => echoResult(n));
  for (let i = 1; i < tools; i++) app.tool(`tool${i}`, { inputSchema: object }, async ({ n }) => echoResult(n));
  url = (await app.listen(0)).url.href;
} else {
  // Both eras on one endpoint, as the http README's example (`front.handle` on node:http).
  url = await listen(createMcpHttp({ legacy, modern, onError: (e) => console.error(e) }).handle);
}

if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const scavenge = () => globalThis.gc!({ type: 'minor', execution: 'sync' } as never);
let gcs: GCProfiler | undefined;
let h0 = getHeapStatistics();
let cpu0 = process.cpuUsage();
let t0 = 0;
/** The window markers (callgrind's `--dump-before=getegid`); POSIX only, as valgrind. */
const mark = () => process.getegid!();
// Output with a synchronous write to fd 1, and commands as signals: nothing of the control channel
// runs Node's stream code, which the HTTP sockets share (reading commands from stdin in the window
// deoptimized Readable's functions, "wrong map", and the window then held their recompilation).
const say = (line: string) => writeSync(1, `${line}\n`);

let phase = 0;
process.on('SIGUSR2', () => {
  phase++;
  if (phase === 3) {
    mark(); // window end
    const h1 = getHeapStatistics();
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - t0;
    const gcList = gcs?.stop().statistics.map((g) => g.gcType) ?? [];
    scavenge();
    const h2 = getHeapStatistics();
    say(
      `RESULT ${JSON.stringify({
        server: name,
        tools,
        node: process.version,
        gcsInWindow: gcList,
        allocBytes: h1.used_heap_size - h0.used_heap_size,
        survivingBytes: h2.used_heap_size - h0.used_heap_size,
        cpuUs: cpu.user + cpu.system,
        wallUs: Math.round(wall * 1000),
      })}`,
    );
    process.exit(0);
  } else if (phase === 1) {
    scavenge();
    say('OK');
  } else if (phase === 2) {
    scavenge();
    gcs = new GCProfiler();
    gcs.start();
    h0 = getHeapStatistics();
    if (process.env.CG_START_SO) {
      // Its constructor starts callgrind's instrumentation; node then throws "did not self-register": expected.
      try {
        process.dlopen({ exports: {} }, process.env.CG_START_SO);
      } catch {}
    }
    cpu0 = process.cpuUsage();
    t0 = performance.now();
    mark(); // window start
    say('STARTED');
  }
});
say(`URL ${url}`);
