#!/usr/bin/env node
// The root README's one-page server, checked as issue 23's "Done when" says, by scripts/pack-check.mjs
// in the consumer project that has every tarball, both SDK lines, zod and tsx installed, and the
// README's app.ts (and follow.ts, when the README has it) written as the README shows them:
//
//   node readme-server.mjs
//
// 1. `tsx app.ts` (what `npx tsx app.ts` runs) with PORT set (a free port) and TETHER_INLINE_MS=4000 (the jobs' inline
//    window, scaled like the follow run below); waits for its `listening on URL` line.
// 2. An SDK 1.x client session: the three tools listed; 20 concurrent counter.increment return 1..20;
//    counter.reset answered no leaves the counter, answered yes sets it to 0; a 3-second reindex
//    reports progress and returns its result.
// 3. Raw 2026-07-28 requests (fetch, no SDK) on the same URL: tools/list, counter.increment,
//    counter.reset (input_required, then the retry with the answer), reindex.
// 4. follow.ts with the README's 90 s run / 60 s timeout scaled to 9 s / 6 s (and the URL's port):
//    it must print increasing progress and the result (through the 2025-11-25 task the client asks for).
// 5. SIGTERM while a reindex runs: the call still gets its result (grace period), the process
//    exits 0.
// Prints `ok` and exits 0, else prints the problem and exits 1.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const fail = (message) => {
  throw new Error(message);
};
const expectEqual = (actual, expected, what) => {
  if (JSON.stringify(actual) !== JSON.stringify(expected))
    fail(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
};
const textOf = (result) => result?.content?.[0]?.text;

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** `npx tsx file` in this project; resolves `{ code, stdout, stderr }`. */
function run(file, { env = {}, timeoutMs = 60_000 } = {}) {
  return new Promise((resolve) => {
    const child = spawn('npx', ['tsx', file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout, stderr });
    });
  });
}

const port = await freePort();
// `npx tsx app.ts` runs this same bin; spawned directly so that SIGTERM reaches tsx, which relays it
// to the server (npm exec does not pass a SIGTERM on: it exits and leaves tsx running).
const app = spawn(join('node_modules', '.bin', 'tsx'), ['app.ts'], {
  env: { ...process.env, PORT: String(port), TETHER_INLINE_MS: '4000' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let appOut = '';
app.stdout.on('data', (d) => (appOut += d));
app.stderr.on('data', (d) => (appOut += d));
const exited = new Promise((resolve) => app.on('exit', (code, signal) => resolve(code ?? signal)));
const killer = setTimeout(() => app.kill('SIGKILL'), 150_000);

try {
  // 1. listening
  const end = Date.now() + 60_000;
  const listening = () => /listening on (http\S+)/.exec(appOut)?.[1];
  while (!listening()) {
    if (Date.now() > end || app.exitCode !== null) fail(`app.ts did not report "listening on URL":\n${appOut}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = listening();
  if (new URL(url).port !== String(port) || new URL(url).pathname !== '/mcp')
    fail(`listening on ${url}, not :${port}/mcp`);

  // 2. an SDK 1.x client session
  let answer = { action: 'accept', content: { confirm: false } };
  const client = new Client({ name: 'readme-check', version: '0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async () => answer);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const names = (await client.listTools()).tools.map((t) => t.name);
  for (const n of ['reindex', 'counter.increment', 'counter.reset'])
    if (!names.includes(n)) fail(`tools/list (SDK 1.x session) lacks ${n}: ${names}`);
  const call = (name, args = {}, options) =>
    client.callTool({ name, arguments: args }, undefined, options).then((r) => textOf(r));
  const values = await Promise.all(Array.from({ length: 20 }, () => call('counter.increment')));
  expectEqual(
    values.map(Number).sort((a, b) => a - b),
    Array.from({ length: 20 }, (_, i) => i + 1),
    '20 increments',
  );
  const kept = await call('counter.reset');
  if (!kept.includes('20')) fail(`reset answered no: expected the counter left at 20, got ${kept}`);
  answer = { action: 'accept', content: { confirm: true } };
  const reset = await call('counter.reset');
  if (!/\b0\b/.test(reset)) fail(`reset answered yes: ${reset}`);
  expectEqual(await call('counter.increment'), '1', 'increment after the reset');
  const progress = [];
  const reindexed = await call('reindex', { seconds: 3 }, { onprogress: (p) => progress.push(p.progress) });
  if (!reindexed?.includes('3')) fail(`reindex 3 s: the result does not name 3 seconds: ${reindexed}`);
  if (progress.length < 1 || progress.some((v, i) => i > 0 && !(v > progress[i - 1])))
    fail(`reindex 3 s: progress ${JSON.stringify(progress)}`);

  // 3. raw 2026-07-28 requests on the same URL
  let id = 0;
  const raw26 = async (method, params, capabilities = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': method,
        ...(params.name && { 'mcp-name': params.name }),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++id,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': capabilities,
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
          },
        },
      }),
    });
    const body = await res.text();
    const messages = body.trimStart().startsWith('{')
      ? [JSON.parse(body)]
      : body
          .split('\n')
          .filter((l) => l.startsWith('data:') && l.slice(5).trim())
          .map((l) => JSON.parse(l.slice(5)));
    const response = messages.find((m) => m.id === id && !m.method);
    if (!response?.result) fail(`2026-07-28 ${method} ${params.name ?? ''}: HTTP ${res.status} ${body.slice(0, 300)}`);
    return response.result;
  };
  const listed = (await raw26('tools/list', {})).tools.map((t) => t.name);
  for (const n of ['reindex', 'counter.increment', 'counter.reset'])
    if (!listed.includes(n)) fail(`tools/list (2026-07-28) lacks ${n}`);
  expectEqual(textOf(await raw26('tools/call', { name: 'counter.increment', arguments: {} })), '2', '2026 increment');
  const elicit = { elicitation: { form: {} } };
  const asked = await raw26('tools/call', { name: 'counter.reset', arguments: {} }, elicit);
  if (asked.resultType !== 'input_required') fail(`2026 reset: expected input_required, got ${JSON.stringify(asked)}`);
  const [key] = Object.keys(asked.inputRequests);
  const answered = await raw26(
    'tools/call',
    {
      name: 'counter.reset',
      arguments: {},
      requestState: asked.requestState,
      inputResponses: { [key]: { action: 'accept', content: { confirm: true } } },
    },
    elicit,
  );
  if (!/\b0\b/.test(textOf(answered))) fail(`2026 reset answered yes: ${JSON.stringify(answered)}`);
  expectEqual(textOf(await raw26('tools/call', { name: 'counter.increment', arguments: {} })), '1', '2026 after reset');
  const short = textOf(await raw26('tools/call', { name: 'reindex', arguments: { seconds: 1 } }));
  if (!short?.includes('1')) fail(`2026 reindex 1 s: ${short}`);

  // 4. follow.ts: a long run through a shorter client timeout (scaled 10x down)
  if (existsSync('follow.ts')) {
    const text = readFileSync('follow.ts', 'utf8');
    const scaled = text
      .replace('seconds: 90', 'seconds: 9')
      .replace('60_000', '6_000')
      .replace('http://127.0.0.1:3000/mcp', url);
    if (scaled === text || !scaled.includes('seconds: 9') || !scaled.includes('6_000') || !scaled.includes(url))
      fail('follow.ts: expected `seconds: 90`, `60_000` and http://127.0.0.1:3000/mcp to scale');
    writeFileSync('follow-scaled.ts', scaled);
    const r = await run('follow-scaled.ts', { timeoutMs: 60_000 });
    if (r.code !== 0) fail(`npx tsx follow.ts exited ${r.code}\n${r.stdout}${r.stderr}`);
    const seen = [...r.stdout.matchAll(/^progress (\d+(?:\.\d+)?)/gm)].map((m) => Number(m[1]));
    if (seen.length < 2 || seen.some((v, i) => i > 0 && !(v > seen[i - 1])))
      fail(`follow.ts: progress lines ${JSON.stringify(seen)}\n${r.stdout}`);
    if (!r.stdout.includes('9 seconds')) fail(`follow.ts: no result naming 9 seconds\n${r.stdout}`);
  }

  // 5. SIGTERM during a call: the call gets its result, the process exits 0
  const running = call('reindex', { seconds: 2 });
  await new Promise((r) => setTimeout(r, 500));
  app.kill('SIGTERM');
  const last = await running;
  if (!last?.includes('2')) fail(`a reindex running at SIGTERM: ${last}`);
  const code = await exited;
  if (code !== 0) fail(`app.ts exited ${code} after SIGTERM\n${appOut}`);
  await client.close().catch(() => {});
  console.log('ok');
} catch (error) {
  console.error(`${error.message}\n--- app.ts output ---\n${appOut}`);
  app.kill('SIGKILL');
  process.exitCode = 1;
} finally {
  clearTimeout(killer);
}
process.exit(); // the SDK client's connection must not keep this check alive
