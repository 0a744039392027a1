#!/usr/bin/env node
// Run the official MCP conformance suite against the demo.
//
//   node scripts/conformance.mjs [--version V]... [--scenario S]... [--wire 2025|2026]... [--budget-ms N]
//
// Starts the demo (dist/bin.js when built, else src/bin.ts through tsx) on a free loopback port,
// runs each focus scenario with each pinned suite version through
//   npx -y -p node@22 -p @modelcontextprotocol/conformance@V -- conformance server --url URL --scenario S
// (the 2025-11-25 wire: stateful sessions, SDK v1), then the 2026-07-28 scenarios with alpha.12 and
// `--spec-version 2026-07-28` (stateless requests, SDK v2) against the same URL
// (the suite needs Node >= 22; it is never a dependency), stops the server by its pid in every
// case, and exits 1 if any check FAILed, a run timed out, or the budget ran out.
// The last line is our own `conformance: N passed, N failed` (counting scenario runs), so a log
// reader sees the real outcome rather than the suite's own `Total:` lines.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';

const VERSIONS = ['0.1.16', '0.2.0-alpha.12'];
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

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'), // `pnpm conformance -- --scenario x` passes the `--` on
  options: {
    version: { type: 'string', multiple: true },
    scenario: { type: 'string', multiple: true },
    wire: { type: 'string', multiple: true },
    'budget-ms': { type: 'string', default: process.env.CONFORMANCE_BUDGET_MS ?? String(20 * 60_000) },
  },
  strict: true,
});
const versions = values.version ?? VERSIONS;
const wires = values.wire ?? ['2025', '2026'];
for (const w of wires) if (w !== '2025' && w !== '2026') throw new Error(`--wire must be 2025 or 2026, not ${w}`);
/** Every run: { version, spec (undefined = the suite's default, 2025-11-25), scenario }. */
const plan = [];
if (wires.includes('2025')) {
  for (const version of versions) for (const scenario of values.scenario ?? SCENARIOS) plan.push({ version, spec: undefined, scenario });
}
if (wires.includes('2026') && versions.includes(MODERN_VERSION)) {
  const modern = values.scenario ? values.scenario.filter((s) => MODERN_SCENARIOS.includes(s)) : MODERN_SCENARIOS;
  for (const scenario of modern) plan.push({ version: MODERN_VERSION, spec: MODERN_SPEC, scenario });
}
const budgetMs = Number(values['budget-ms']);
const deadline = Date.now() + budgetMs;
const FIRST_RUN_TIMEOUT_MS = 300_000; // npx may download node@22 and the suite
const RUN_TIMEOUT_MS = 120_000;

const appDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, '');
const log = (s = '') => process.stdout.write(`${s}\n`);

// ------------------------------------------------------------------ the server

let server; // ChildProcess
function startServer() {
  const built = join(appDir, 'dist', 'bin.js');
  let args;
  if (existsSync(built)) args = [built];
  else {
    const tsx = pathToFileURL(createRequire(join(appDir, 'package.json')).resolve('tsx')).href;
    args = ['--import', tsx, join(appDir, 'src', 'bin.ts')];
  }
  args.push('--port', '0', '--quiet');
  server = spawn(process.execPath, args, { cwd: appDir, stdio: ['ignore', 'pipe', 'inherit'] });
  log(`conformance: started the demo (pid ${server.pid}): node ${args.map((a) => a.replace(appDir + '/', '')).join(' ')}`);
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

let running; // ChildProcess of the current suite run (own process group)
function runScenario({ version, spec, scenario }, url, timeoutMs) {
  return new Promise((resolve) => {
    const args = ['-y', '-p', 'node@22', '-p', `@modelcontextprotocol/conformance@${version}`, '--', 'conformance', 'server', '--url', url, '--scenario', scenario];
    if (spec) args.push('--spec-version', spec);
    const child = spawn('npx', args, { cwd: appDir, stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' } });
    running = child;
    let out = '';
    let pending = ''; // a partial line, shown once complete
    // npm's own noise: its engine warning about a dependency of the suite (which runs on node@22
    // anyway) and, under pnpm, warnings about pnpm's npm_config_* variables.
    const noise = /^npm warn (EBADENGINE|Unknown env config)/;
    const show = (text) => {
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) if (!noise.test(strip(line))) process.stdout.write(`${line}\n`);
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
      resolve({ version, spec, scenario, code, timedOut, skipped, ok, ...checks });
    });
  });
}

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGTERM'); // the npx process group we created (npx + the suite's node)
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
  const url = await startServer();
  await waitReady(url);
  log(`conformance: the demo answers at ${url}`);
  const seen = new Set(); // versions already run once (the first run may download)
  for (const run of plan) {
    const left = deadline - Date.now();
    if (left <= 0) {
      fatal = `time budget of ${budgetMs} ms used up`;
      break;
    }
    log(`\n=== conformance@${run.version}${run.spec ? ` --spec-version ${run.spec}` : ''} ${run.scenario} ===`);
    const r = await runScenario(run, url, Math.min(left, seen.has(run.version) ? RUN_TIMEOUT_MS : FIRST_RUN_TIMEOUT_MS));
    seen.add(run.version);
    results.push(r);
  }
} catch (err) {
  fatal = err.message;
} finally {
  await stopServer();
}

log('\n=== tether demo conformance summary ===');
const width = Math.max(0, ...plan.map((r) => r.scenario.length));
const groups = [...new Set(plan.map((r) => `${r.version}\u0000${r.spec ?? ''}`))];
for (const group of groups) {
  const [version, spec] = group.split('\u0000');
  log(`@modelcontextprotocol/conformance@${version}, wire ${spec || '2025-11-25 (default)'}`);
  for (const r of results.filter((x) => x.version === version && (x.spec ?? '') === spec)) {
    const status = r.ok ? 'PASS' : r.timedOut ? 'TIMEOUT' : r.skipped ? 'SKIPPED' : 'FAIL';
    log(`  ${status.padEnd(7)} ${r.scenario.padEnd(width)}  checks: ${r.success} ok, ${r.failure} failed, ${r.warning} warnings (exit ${r.code})`);
  }
}
if (fatal) log(`conformance: ERROR ${fatal}`);
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed + (fatal ? 1 : 0);
log(`conformance: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
