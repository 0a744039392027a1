#!/usr/bin/env node
// Run the official MCP conformance suite against the demo.
//
//   node scripts/conformance.mjs [--url URL] [--version V]... [--scenario S]... [--wire 2025|2026|tasks]... [--budget-ms N]
//
// 1. Installs the suite ONCE (node@22 and every pinned @modelcontextprotocol/conformance version,
//    in one `npm install` into node_modules/.cache/tether-conformance; reused while the pins are
//    unchanged). The suite needs Node >= 22 for an import at its top; node@22 from npm provides
//    it, and it is never a dependency of the demo.
// 2. Starts the demo with its conformance fixtures (`dist/bin.js --conformance` when built, else
//    src/bin.ts through tsx) on a free loopback port, unless --url names a running server (which
//    must expose the fixtures: `npm run dev -- --conformance`).
// 3. Runs each focus scenario with each pinned suite version on the 2025-11-25 wire (stateful
//    sessions, SDK v1), then the 2026-07-28 scenarios with alpha.12 and `--spec-version
//    2026-07-28` (stateless requests, SDK v2), then the tasks-extension scenarios (SEP-2663) with
//    alpha.12 and no --spec-version (the suite runs extension scenarios only off the spec timeline;
//    it speaks 2026-07-28 on them) against the same URL, calling the installed suite directly (no
//    npx per scenario).
// Stops the server it started by its pid in every case, and exits 1 if any check FAILed, a run
// timed out, or the budget ran out. The last line is our own `conformance: N passed, N failed`
// (counting scenario runs), so a log reader sees the real outcome rather than the suite's own
// `Total:` lines. Colours only on a terminal, never with NO_COLOR set (https://no-color.org).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';

const VERSIONS = ['0.1.16', '0.2.0-alpha.12'];
/** The Node the suite runs on (verified: 22.23.3 on a Node 20 host, shared/reference/conformance.md §0). */
const SUITE_NODE = '22.23.3';
const SCENARIOS = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-error',
  'tools-call-with-progress',
  'tools-call-with-logging',
  'tools-call-elicitation',
  'elicitation-sep1034-defaults',
  'elicitation-sep1330-enums',
  'server-sse-multiple-streams',
  'server-sse-polling',
  'dns-rebinding-protection',
];

// The 2026-07-28 wire (SDK v2 leg of the same endpoint): alpha.12 with --spec-version 2026-07-28.
const MODERN_VERSION = '0.2.0-alpha.12';
const MODERN_SPEC = '2026-07-28';
const MODERN_SCENARIOS = [
  'tools-call-with-progress',
  'input-required-result-basic-elicitation',
  'input-required-result-basic-sampling',
  'input-required-result-basic-list-roots',
  'input-required-result-request-state',
  'input-required-result-multiple-input-requests',
  'input-required-result-multi-round',
  'input-required-result-missing-input-response',
  'input-required-result-non-tool-request',
  'input-required-result-result-type',
  'input-required-result-unsupported-methods',
  'input-required-result-tampered-state',
  'input-required-result-capability-check',
  'input-required-result-ignore-extra-params',
  'input-required-result-validate-input',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
];
// The tasks extension io.modelcontextprotocol/tasks (SEP-2663): alpha.12, no --spec-version
// (`--spec-version 2026-07-28` skips them: "extension scenario, not on the spec timeline").
const TASKS_SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-required-task-error',
  'tasks-dispatch-and-envelope',
  'tasks-mrtr-composition',
];
// Not listed: tasks-status-notifications, which alpha.12 skips itself (0 checks: "pending
// subscriptions/listen rewrite"); a run of it would read as a PASS that checked nothing.
/** A fixture every run needs; its absence means the server was started without --conformance. */
const FIXTURE_PROBE = 'test_simple_text';

const USAGE = `usage: npm run conformance -- [--url URL] [--version V]... [--scenario S]... [--wire 2025|2026|tasks]... [--budget-ms N]

  --url URL     run against a server that is already running (start the demo with its fixtures:
                npm run dev -- --conformance); default: start our own on a free port
  --version V   suite version(s) to run: ${VERSIONS.join(', ')} (default: both)
  --scenario S  only these scenarios (2025 wire: ${SCENARIOS.length} scenarios; 2026-07-28 wire: ${MODERN_SCENARIOS.length}; tasks extension: ${TASKS_SCENARIOS.length})
  --wire W      2025, 2026 and/or tasks (the tasks extension, SEP-2663) (default: all three)
  --budget-ms N bound on the whole run (default $CONFORMANCE_BUDGET_MS or 20 min)`;

let values;
try {
  ({ values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== '--'), // `pnpm conformance -- --scenario x` passes the `--` on
    options: {
      url: { type: 'string' },
      version: { type: 'string', multiple: true },
      scenario: { type: 'string', multiple: true },
      wire: { type: 'string', multiple: true },
      'budget-ms': { type: 'string', default: process.env.CONFORMANCE_BUDGET_MS ?? String(20 * 60_000) },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  }));
} catch (err) {
  console.error(`conformance: ${err.message}\n\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const usageError = (msg) => {
  console.error(`conformance: ${msg}\n\n${USAGE}`);
  process.exit(2);
};
const versions = values.version ?? VERSIONS;
for (const v of versions)
  if (!VERSIONS.includes(v)) usageError(`--version must be one of ${VERSIONS.join(', ')}, not ${v}`);
const wires = values.wire ?? ['2025', '2026', 'tasks'];
for (const w of wires)
  if (w !== '2025' && w !== '2026' && w !== 'tasks') usageError(`--wire must be 2025, 2026 or tasks, not ${w}`);
for (const s of values.scenario ?? []) {
  if (!SCENARIOS.includes(s) && !MODERN_SCENARIOS.includes(s) && !TASKS_SCENARIOS.includes(s)) {
    usageError(
      `unknown scenario ${s}; the scenarios that apply to the demo are:\n  2025 wire: ${SCENARIOS.join(' ')}\n  2026-07-28 wire: ${MODERN_SCENARIOS.join(' ')}\n  tasks extension: ${TASKS_SCENARIOS.join(' ')}`,
    );
  }
}
if (values.url !== undefined) {
  let protocol;
  try {
    protocol = new URL(values.url).protocol;
  } catch {
    /* reported below */
  }
  if (protocol !== 'http:' && protocol !== 'https:')
    usageError(`--url must be an absolute http(s) URL, e.g. http://127.0.0.1:3000/mcp (got ${values.url})`);
}
/** Every run: { version, spec (undefined = the suite's default, 2025-11-25), scenario, extension? (off the spec timeline) }. */
const plan = [];
if (wires.includes('2025')) {
  const legacy = values.scenario ? values.scenario.filter((s) => SCENARIOS.includes(s)) : SCENARIOS;
  for (const version of versions) for (const scenario of legacy) plan.push({ version, spec: undefined, scenario });
}
if (wires.includes('2026') && versions.includes(MODERN_VERSION)) {
  const modern = values.scenario ? values.scenario.filter((s) => MODERN_SCENARIOS.includes(s)) : MODERN_SCENARIOS;
  for (const scenario of modern) plan.push({ version: MODERN_VERSION, spec: MODERN_SPEC, scenario });
}
if (wires.includes('tasks') && versions.includes(MODERN_VERSION)) {
  const tasks = values.scenario ? values.scenario.filter((s) => TASKS_SCENARIOS.includes(s)) : TASKS_SCENARIOS;
  for (const scenario of tasks)
    plan.push({
      version: MODERN_VERSION,
      spec: undefined,
      scenario,
      extension: 'tasks extension io.modelcontextprotocol/tasks (SEP-2663)',
    });
}
if (plan.length === 0)
  usageError('nothing to run: no scenario of that selection applies to the chosen versions and wires');
const budgetMs = Number(values['budget-ms']);
const started = Date.now();
const deadline = started + budgetMs;
const INSTALL_TIMEOUT_MS = 300_000;
const RUN_TIMEOUT_MS = 120_000;

const appDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const SGR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'); // ANSI colour codes
const strip = (s) => s.replace(SGR, '');
const log = (s = '') => process.stdout.write(`${s}\n`);
const color =
  !process.env.NO_COLOR &&
  (Boolean(process.stdout.isTTY) || (process.env.FORCE_COLOR !== undefined && process.env.FORCE_COLOR !== '0'));
const paint = (code, s) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

// ------------------------------------------------------------------ the suite, installed once

const suiteDir = join(appDir, 'node_modules', '.cache', 'tether-conformance');
const alias = (version) => `conformance-${version}`;

/** Install node@22 and every pinned suite version in one `npm install`, unless already there. */
async function ensureSuite() {
  const dependencies = { node: SUITE_NODE };
  for (const v of VERSIONS) dependencies[alias(v)] = `npm:@modelcontextprotocol/conformance@${v}`;
  const marker = join(suiteDir, '.installed.json');
  const want = JSON.stringify(dependencies);
  const nodeBin = join(suiteDir, 'node_modules', 'node', 'bin', 'node');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === want && existsSync(nodeBin)) {
    log(`conformance: suite already installed (${suiteDir.replace(appDir + '/', '')})`);
    return;
  }
  mkdirSync(suiteDir, { recursive: true });
  writeFileSync(
    join(suiteDir, 'package.json'),
    JSON.stringify({ name: 'tether-conformance-suite', private: true, dependencies }, null, 2),
  );
  log(
    `conformance: installing node@${SUITE_NODE} and @modelcontextprotocol/conformance ${VERSIONS.join(', ')} once (npm install, ~10 s)...`,
  );
  const t0 = Date.now();
  const code = await new Promise((resolve, reject) => {
    const child = spawn(
      'npm',
      ['install', '--no-audit', '--no-fund', '--no-update-notifier', '--loglevel=error', '--no-save'],
      { cwd: suiteDir, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    running = child;
    const timer = setTimeout(() => child.kill('SIGTERM'), INSTALL_TIMEOUT_MS);
    child.once('error', reject);
    child.once('exit', (c, signal) => {
      clearTimeout(timer);
      running = undefined;
      resolve(c ?? signal);
    });
  });
  if (code !== 0 || !existsSync(nodeBin))
    throw new Error(`installing the suite failed (npm install exit ${code}; needs the npm registry)`);
  writeFileSync(marker, want);
  log(`conformance: suite installed in ${seconds(Date.now() - t0)}`);
}

/** [node binary, suite entry script] for one pinned version. */
function suiteCommand(version) {
  const dir = join(suiteDir, 'node_modules', alias(version));
  const { bin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const entry = typeof bin === 'string' ? bin : bin.conformance;
  return [join(suiteDir, 'node_modules', 'node', 'bin', 'node'), join(dir, entry)];
}

// ------------------------------------------------------------------ the server

let server; // ChildProcess (only when we started it)
function startServer() {
  const built = join(appDir, 'dist', 'bin.js');
  let args;
  if (existsSync(built)) args = [built];
  else {
    const tsx = pathToFileURL(createRequire(join(appDir, 'package.json')).resolve('tsx')).href;
    args = ['--import', tsx, join(appDir, 'src', 'bin.ts')];
  }
  args.push('--port', '0', '--quiet', '--conformance');
  server = spawn(process.execPath, args, { cwd: appDir, stdio: ['ignore', 'pipe', 'inherit'] });
  log(
    `conformance: started the demo (pid ${server.pid}): node ${args.map((a) => a.replace(appDir + '/', '')).join(' ')}`,
  );
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('the demo did not report its URL within 30 s')), 30_000);
    server.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the demo exited early (code ${code}, signal ${signal})`));
    });
    server.stdout.on('data', (chunk) => {
      buf += chunk;
      const m = /tether-demo listening on (\S+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
}

async function waitReady(url) {
  // A GET without a session must be answered 400: proves the endpoint is up and routing.
  for (let i = 0; i < 50; i++) {
    try {
      const res = await fetch(url, { headers: { accept: 'text/event-stream' } });
      await res.body?.cancel();
      if (res.status === 400) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within 10 s`);
}

/** The tools a server at `url` lists (a real SDK client session, closed after). */
async function listTools(url) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const client = new Client({ name: 'tether-conformance-probe', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport, { timeout: 10_000 });
  try {
    return (await client.listTools(undefined, { timeout: 10_000 })).tools.map((t) => t.name);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
}

async function stopServer() {
  if (!server || server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((r) => server.once('exit', r));
  server.kill('SIGTERM');
  const t = setTimeout(() => server.kill('SIGKILL'), 8_000);
  await exited;
  clearTimeout(t);
  log(`conformance: stopped the demo (pid ${server.pid})`);
}

// ------------------------------------------------------------------ one suite run

let running; // ChildProcess of the current step (own process group for suite runs)
function runScenario({ version, spec, scenario, extension }, url, timeoutMs) {
  return new Promise((resolve) => {
    const [node, entry] = suiteCommand(version);
    const args = [entry, 'server', '--url', url, '--scenario', scenario];
    if (spec) args.push('--spec-version', spec);
    const env = { ...process.env };
    if (color) {
      env.FORCE_COLOR = '1'; // the suite writes to our pipe, not to the terminal
      delete env.NO_COLOR;
    } else {
      env.NO_COLOR = '1';
      env.FORCE_COLOR = '0';
    }
    const t0 = Date.now();
    const child = spawn(node, args, { cwd: appDir, stdio: ['ignore', 'pipe', 'pipe'], detached: true, env });
    running = child;
    let out = '';
    let pending = ''; // a partial line, shown once complete
    const show = (text) => {
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) process.stdout.write(`${color ? line : strip(line)}\n`);
    };
    const onData = (chunk) => {
      out += chunk;
      show(String(chunk));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      show('\n');
      running = undefined;
      const text = strip(out);
      const count = (status) => (text.match(new RegExp(`\\]\\s+${status}\\b`, 'g')) ?? []).length;
      const checks = { success: count('SUCCESS'), failure: count('FAILURE'), warning: count('WARNING') };
      const skipped = /^SKIPPED:/m.test(text);
      const ok = code === 0 && !timedOut && checks.failure === 0 && !skipped;
      resolve({ version, spec, scenario, extension, code, timedOut, skipped, ok, ms: Date.now() - t0, ...checks });
    });
  });
}

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGTERM'); // the process group we created (the suite's node)
  } catch {
    /* already gone */
  }
  setTimeout(() => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }, 3_000).unref();
}

// ------------------------------------------------------------------ main

const results = [];
let fatal;
const onSignal = async (sig) => {
  log(`conformance: ${sig}, stopping`);
  if (running) killGroup(running);
  await stopServer();
  process.exit(130);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

try {
  let url;
  if (values.url) {
    url = values.url;
    log(`conformance: against ${url} (not started by us)`);
  } else {
    url = await startServer();
    await waitReady(url);
  }
  let tools;
  try {
    tools = await listTools(url);
  } catch (err) {
    throw new Error(
      `cannot list the tools of ${url}: ${err.message}${values.url ? ' (is the server running? npm run dev -- --conformance)' : ''}`,
    );
  }
  if (!tools.includes(FIXTURE_PROBE)) {
    throw new Error(
      `${url} does not expose the conformance fixtures (no ${FIXTURE_PROBE} among its ${tools.length} tools): ` +
        'start the demo with them, `npm run dev -- --conformance`, or run `npm run conformance` without --url (it starts its own)',
    );
  }
  log(`conformance: the server answers at ${url} (${tools.length} tools)`);
  await ensureSuite();
  log(`conformance: ${plan.length} scenario runs`);
  for (const run of plan) {
    const left = deadline - Date.now();
    if (left <= 0) {
      fatal = `time budget of ${budgetMs} ms used up`;
      break;
    }
    log(`\n=== conformance@${run.version}${run.spec ? ` --spec-version ${run.spec}` : ''} ${run.scenario} ===`);
    results.push(await runScenario(run, url, Math.min(left, RUN_TIMEOUT_MS)));
  }
} catch (err) {
  fatal = err.message;
} finally {
  await stopServer();
}

log('\n=== tether demo conformance summary ===');
const width = Math.max(0, ...plan.map((r) => r.scenario.length));
const groups = [...new Set(plan.map((r) => `${r.version}\u0000${r.spec ?? ''}\u0000${r.extension ?? ''}`))];
for (const group of groups) {
  const [version, spec, extension] = group.split('\u0000');
  const rows = results.filter(
    (x) => x.version === version && (x.spec ?? '') === spec && (x.extension ?? '') === extension,
  );
  if (rows.length === 0) continue;
  log(`@modelcontextprotocol/conformance@${version}, ${extension || `wire ${spec || '2025-11-25 (default)'}`}`);
  for (const r of rows) {
    const status = r.ok ? 'PASS' : r.timedOut ? 'TIMEOUT' : r.skipped ? 'SKIPPED' : 'FAIL';
    const painted = paint(r.ok ? '32' : '31', status.padEnd(7));
    log(
      `  ${painted} ${r.scenario.padEnd(width)}  checks: ${r.success} ok, ${r.failure} failed, ${r.warning} warnings (exit ${r.code}, ${seconds(r.ms)})`,
    );
  }
}
if (fatal) log(paint('31', `conformance: ERROR ${fatal}`));
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed + (fatal ? 1 : 0);
log(`conformance: whole run ${seconds(Date.now() - started)}`);
log(`conformance: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
