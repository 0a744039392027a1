// Instructions per server factory call, in process (issue 28): what a 2026-07-28 request pays for its
// server before the SDK serves it, against the number of registered tools, without HTTP around it.
//
//   valgrind --tool=callgrind --instr-atstart=no --dump-before=getegid --callgrind-out-file=/tmp/cg-f \
//     node <V8 flags of src/instructions.ts> instructions/factory.mjs <variant> <tools> <N> [warmup=2000]
//   (CG_START_SO=<cg_start.so> switches instrumentation on at the window; /tmp/cg-f.2 is the window)
//
// variant: sdk    new McpServer (SDK 2.x) + `tools` registerTool (schemas built once, outside)
//          core   the same, tether(server, []) first
//          full   the same, tether(server, fullStack()) (the six middlewares, made once)
//          table  tether(server, []) + a core toolTable's install() (tools registered once)
//          preset @mcp-tether/server createApp(...).createServer('v2') (what the preset's factory builds)
// Each factory call is followed by `toolInputSchemaJson('echo')`, as the SDK's createMcpHandler does
// for a tools/call before it dispatches (`SCHEMA=0`: not).
// Prints "RESULT {...}" on stderr: instructions are read from the dump; gcsInWindow must be [].
import { GCProfiler } from 'node:v8';

const BENCH = process.env.TETHER_BENCH_DIR ?? new URL('..', import.meta.url).pathname;
const [variant, toolsArg, nArg, wArg] = process.argv.slice(2);
const tools = Number(toolsArg);
const N = Number(nArg);
const W = wArg === undefined ? 2000 : Number(wArg);
const VARIANTS = ['sdk', 'core', 'full', 'table', 'preset'];
if (!VARIANTS.includes(variant) || !(tools >= 1) || !(N >= 1) || !(W >= 0)) {
  console.error(`usage: factory.mjs <${VARIANTS.join('|')}> <tools> <N> [warmup=2000]`);
  process.exit(2);
}
const core = await import('@mcp-tether/core');
const { McpServer } = await import('@modelcontextprotocol/server');
const { z } = await import('zod');
const { fullStack, echoResult } = await import(`${BENCH}/dist/servers.js`);
const INFO = { name: 'bench', version: '1.0.0' };
const object = z.object({ n: z.number() });
const register = (s) => {
  s.registerTool('echo', { inputSchema: object }, async ({ n }) => echoResult(n));
  for (let i = 1; i < tools; i++) s.registerTool(`tool${i}`, { inputSchema: object }, async ({ n }) => echoResult(n));
};
let factory;
if (variant === 'sdk')
  factory = () => {
    const s = new McpServer(INFO);
    register(s);
    return s;
  };
else if (variant === 'core' || variant === 'full') {
  const mws = variant === 'full' ? fullStack() : [];
  factory = () => {
    const s = core.tether(new McpServer(INFO), mws);
    register(s);
    return s;
  };
} else if (variant === 'table') {
  const table = core.toolTable(register);
  factory = () => table.install(core.tether(new McpServer(INFO), []));
} else {
  const { createApp } = await import('@mcp-tether/server');
  const app = createApp({ ...INFO, log: false, handleSignals: false });
  app.tool('echo', { inputSchema: object }, async ({ n }) => echoResult(n));
  for (let i = 1; i < tools; i++) app.tool(`tool${i}`, { inputSchema: object }, async ({ n }) => echoResult(n));
  await app.start();
  factory = () => app.createServer('v2');
}
// The SDK's per-request step after the factory (SCHEMA=0 leaves it out).
const schema = process.env.SCHEMA !== '0';
const run = () => {
  const s = factory();
  if (schema) s.toolInputSchemaJson('echo');
};
for (let i = 0; i < W; i++) run();
globalThis.gc({ type: 'minor', execution: 'sync' });
for (let i = 0; i < 200; i++) run();
globalThis.gc({ type: 'minor', execution: 'sync' });
const gcs = new GCProfiler();
gcs.start();
if (process.env.CG_START_SO) {
  try {
    process.dlopen({ exports: {} }, process.env.CG_START_SO);
  } catch {}
}
process.getegid();
for (let i = 0; i < N; i++) run();
process.getegid();
const gcList = gcs.stop().statistics.map((g) => g.gcType);
console.error(`RESULT ${JSON.stringify({ variant, tools, N, W, gcsInWindow: gcList })}`);
