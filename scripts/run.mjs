#!/usr/bin/env node
// Entry point for every root script, so that `npm run <task>` works on a machine that has only
// Node 20 and npm: it finds pnpm (or runs the pinned one through npx), installs the workspace
// when needed, then runs the task. `pnpm <task>` goes through here too.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pinned = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager; // "pnpm@x.y.z"
const pinnedVersion = pinned.split('@')[1];

// Interrupts (Ctrl+C, SIGTERM, a closed terminal). Each step runs in its own process group, so a
// signal reaches the whole tree (pnpm, sh, tsx, the server) exactly once, through us: the server
// gets one SIGINT and drains instead of being told twice (`npm run` forwards the terminal's SIGINT
// to us as well, so a repeat within REPEAT_MS is the same interrupt). Once the group is gone we die
// of the same signal: the shell sees 130 for SIGINT, and npm stays quiet. pnpm runs with
// --reporter=silent so that it does not report the interrupted child as ERR_PNPM_...; a step that
// fails on its own is named by us instead.
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const REPEAT_MS = 500;
const GROUP_EXIT_MS = 10_000; // the demo drains for at most 5 s and forces its exit at 7 s
const posix = process.platform !== 'win32';
let interrupted; // the first signal received
let current; // { child, group, lastForward: { [signal]: ms } } for the step that is running

for (const signal of FORWARDED) {
  process.on(signal, () => {
    interrupted ??= signal;
    if (!current) return dieOf(signal);
    const now = Date.now();
    if (now - (current.lastForward[signal] ?? -Infinity) < REPEAT_MS) return;
    current.lastForward[signal] = now;
    try {
      if (current.group) process.kill(-current.child.pid, signal);
      // Same process group as ours (a step that needs the terminal): the terminal's SIGINT and
      // SIGHUP already reached it; only what was sent to us alone is passed on.
      else if (signal === 'SIGTERM') current.child.kill(signal);
    } catch {
      /* already gone */
    }
  });
}

// `kill <npm pid>` (or a container stopping npm as its PID 1) ends npm alone: it does not pass the
// SIGTERM on, and we would be left running with our step. When our parent is gone, act as if the
// SIGTERM had reached us.
if (posix) {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    process.emit('SIGTERM', 'SIGTERM');
  }, 500);
  watch.unref();
}

/** Exit as killed by `signal` (after the running step's process group is gone). */
function dieOf(signal) {
  for (const s of FORWARDED) process.removeAllListeners(s);
  process.kill(process.pid, signal);
  // Not killed (Windows): exit with the conventional code.
  setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 2)), 500);
}

const groupAlive = (pid) => {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Run one step to its end. Resolves with its exit code; when the user interrupted, never resolves:
 * waits (at most GROUP_EXIT_MS) for every process of the step to leave, then dies of the signal.
 * `terminal: true` keeps the step in our process group, for steps that read the terminal.
 */
function run(cmd, args, { terminal = false, capture } = {}) {
  const group = posix && !terminal;
  const stdio = capture ? ['ignore', 'pipe', 'pipe'] : 'inherit';
  const child = spawn(cmd, args, { cwd: root, stdio, shell: false, detached: group, env: childEnv });
  if (capture) {
    child.stdout.on('data', (chunk) => capture.push(chunk));
    child.stderr.on('data', (chunk) => capture.push(chunk));
  }
  current = { child, group, lastForward: {} };
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', async (code, signal) => {
      if (interrupted) {
        const end = Date.now() + GROUP_EXIT_MS;
        while (group && groupAlive(child.pid) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
        if (group && groupAlive(child.pid)) {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            /* gone meanwhile */
          }
        }
        current = undefined;
        return dieOf(interrupted);
      }
      current = undefined;
      resolve(code ?? 128 + (constants.signals[signal] ?? 1));
    });
  });
}

// What the tools we run would otherwise print for their own sake: turbo's telemetry notice and
// update check (pnpm's and npm's update boxes are off in .npmrc).
const childEnv = {
  ...process.env,
  TURBO_TELEMETRY_DISABLED: '1',
  TURBO_NO_UPDATE_NOTIFIER: '1',
  npm_config_update_notifier: 'false',
};

/** Our own progress lines (stderr, so that a task's stdout stays its own). */
const say = (msg) => process.stderr.write(`tether: ${msg}\n`);
const secondsSince = (t0) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

function pnpmCommand() {
  const probe = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (probe.status === 0 && probe.stdout.trim() === pinnedVersion) return ['pnpm', [], true];
  return ['npx', ['-y', pinned], false];
}

const [pnpmBin, pnpmPre, pnpmOnPath] = pnpmCommand();

/** Run a step that prints little for a long time (a cold build): a line every TICK_MS says it is still going. */
async function withTicker(what, step) {
  const t0 = Date.now();
  const tick = setInterval(() => say(`still ${what} (${secondsSince(t0)})...`), TICK_MS);
  try {
    return await step();
  } finally {
    clearInterval(tick);
  }
}
const TICK_MS = 10_000;
/** pnpm install: its own reporter on (progress), in the terminal's foreground (it may ask a question). */
const pnpmInstall = (...args) =>
  run(pnpmBin, [...pnpmPre, 'install', ...args], { terminal: Boolean(process.stdin.isTTY) });
/** pnpm running a script or binary: only the step's own output. */
const pnpm = (...args) => {
  const options = typeof args.at(-1) === 'object' ? args.pop() : {};
  return run(pnpmBin, [...pnpmPre, '--reporter=silent', ...args], options);
};
const pnpmTerminal = (...args) =>
  run(pnpmBin, [...pnpmPre, '--reporter=silent', ...args], { terminal: Boolean(process.stdin.isTTY) });

async function ensureInstalled() {
  const marker = join(root, 'node_modules', '.modules.yaml');
  const lock = join(root, 'pnpm-lock.yaml');
  if (existsSync(marker) && existsSync(lock) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  const t0 = Date.now();
  say(
    pnpmOnPath
      ? `installing the workspace's dependencies with pnpm ${pinnedVersion} (first run, or the lockfile changed)...`
      : `installing the workspace's dependencies with pnpm ${pinnedVersion}, run through npx (pnpm is not on the PATH; npx fetches it once)...`,
  );
  const frozen = process.env.CI ? ['--frozen-lockfile'] : [];
  const code = await pnpmInstall(...frozen);
  if (code !== 0) {
    say(`pnpm install failed with exit code ${code}`);
    process.exit(code);
  }
  say(`dependencies installed in ${secondsSince(t0)}`);
}

/**
 * Build the packages the demo uses (and the demo itself when `withDemo`) before it starts. turbo's
 * own output (its banner, the task logs) is shown only when the build fails; a first build is
 * announced, with a line every TICK_MS while it runs. Later starts reuse turbo's cache (a second).
 */
async function buildForDemo({ withDemo = false } = {}) {
  const dir = join(root, 'packages');
  const demo = JSON.parse(readFileSync(join(root, 'apps', 'demo', 'package.json'), 'utf8'));
  const used = new Set(Object.keys({ ...demo.dependencies, ...demo.devDependencies }));
  const unbuilt = readdirSync(dir).filter((d) => {
    const manifest = join(dir, d, 'package.json');
    return (
      existsSync(manifest) &&
      used.has(JSON.parse(readFileSync(manifest, 'utf8')).name) &&
      !existsSync(join(dir, d, 'dist'))
    );
  });
  if (withDemo && !existsSync(join(root, 'apps', 'demo', 'dist'))) unbuilt.push('demo');
  const t0 = Date.now();
  if (unbuilt.length) {
    const what = withDemo ? 'the demo and the packages it uses' : 'the packages the demo uses';
    say(
      `building ${what} (${unbuilt.length} not built yet; a first build takes a minute or more on 2 cores, several under load)...`,
    );
  }
  const output = [];
  const filter = withDemo ? '--filter=@mcp-tether/demo...' : '--filter=@mcp-tether/demo^...';
  const build = () =>
    pnpm('exec', 'turbo', 'run', 'build', filter, '--concurrency=2', '--output-logs=errors-only', { capture: output });
  const code = unbuilt.length ? await withTicker('building', build) : await build();
  if (code !== 0) {
    process.stderr.write(Buffer.concat(output));
    say(`the build failed with exit code ${code}`);
    process.exit(code);
  }
  if (unbuilt.length) say(`built in ${secondsSince(t0)}`);
}

/**
 * One turbo run of `args` on a machine that may have only 2 cores: at most 2 tasks at once, a line
 * at least every TICK_MS while it is quiet, every task run to its end (`--continue`: a failure does
 * not stop the others mid-way, so no task is reported as killed), and the failed tasks named once.
 */
async function turboSteps(what, args) {
  const t0 = Date.now();
  const runs = join(root, '.turbo', 'runs');
  const before = new Set(existsSync(runs) ? readdirSync(runs) : []);
  const split = args.indexOf('--');
  const own = split === -1 ? args : args.slice(0, split);
  const passed = split === -1 ? [] : args.slice(split);
  const code = await withTicker(what, () =>
    pnpm('exec', 'turbo', 'run', ...own, '--concurrency=2', '--continue', '--summarize', ...passed),
  );
  if (code !== 0) {
    const summary = existsSync(runs) ? readdirSync(runs).filter((f) => !before.has(f)) : [];
    const failed = [];
    for (const f of summary) {
      try {
        const run = JSON.parse(readFileSync(join(runs, f), 'utf8'));
        for (const t of run.tasks ?? []) if (t.execution?.exitCode) failed.push(t.taskId);
      } catch {
        /* an unreadable summary: the output above still says why */
      }
    }
    say(`${what} failed after ${secondsSince(t0)}${failed.length ? `: ${failed.join(', ')}` : ''}`);
  }
  return code;
}

/** The first non-empty line of an error message, at most 300 characters, ANSI colours removed. */
function firstLine(message) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape starts ANSI colour codes
  const text = String(message ?? 'no message').replace(/\u001b\[[0-9;]*m/g, '');
  return (text.split('\n').find((l) => l.trim() !== '') ?? '').trim().slice(0, 300);
}

function reportFiles() {
  const files = [];
  for (const group of ['packages', 'apps', 'bench']) {
    const dir = join(root, group);
    if (!existsSync(dir)) continue;
    const candidates = group === 'bench' ? [dir] : readdirSync(dir).map((d) => join(dir, d));
    for (const d of candidates)
      if (existsSync(join(d, '.vitest-report.json'))) files.push(join(d, '.vitest-report.json'));
  }
  return files;
}

const task = process.argv[2];
// `npm run X -- --flag` hands us `--flag`, `pnpm X -- --flag` hands us `-- --flag`: accept both.
const rest = process.argv.slice(3);
if (rest[0] === '--') rest.shift();
await ensureInstalled();

const tasks = {
  // Build what the demo needs, then start it on Streamable HTTP (PORT, default 3000).
  // (What the demo's own `dev` and `client` scripts do, with the build step above in front.)
  dev: async () => {
    await buildForDemo();
    return pnpm('--filter', '@mcp-tether/demo', 'exec', 'tsx', 'src/bin.ts', ...rest);
  },
  // Reads the terminal (confirmations), so it stays in the terminal's foreground.
  'demo:client': async () => {
    await buildForDemo();
    return pnpmTerminal('--filter', '@mcp-tether/demo', 'exec', 'tsx', 'src/client.ts', ...rest);
  },
  // (What the demo's `conformance` script does, with the build step above in front.)
  conformance: async () => {
    await buildForDemo({ withDemo: true });
    return pnpm('--filter', '@mcp-tether/demo', 'exec', 'node', 'scripts/conformance.mjs', ...rest);
  },
  bench: () => pnpm('--filter', '@mcp-tether/bench', 'run', 'bench', ...rest),
  // Installable tarballs of every package (tarballs/, or --out DIR): build, then pnpm pack each.
  pack: async () => {
    const code = await withTicker('building the packages', () =>
      pnpm('exec', 'turbo', 'run', 'build', '--filter=./packages/*', '--concurrency=2', '--output-logs=errors-only'),
    );
    return code === 0 ? run(process.execPath, [join(root, 'scripts', 'pack.mjs'), ...rest]) : code;
  },
  build: () => pnpm('exec', 'turbo', 'run', 'build', ...rest),
  typecheck: () => pnpm('exec', 'turbo', 'run', 'typecheck', ...rest),
  lint: () => pnpm('exec', 'turbo', 'run', 'lint', ...rest),
  // The one test command: build, package checks, type checks, every package's tests, then the
  // packed-tarball install check. Ends with one line summing every vitest run.
  test: async () => {
    for (const f of reportFiles()) rmSync(f, { force: true });
    // Format and lint first (a second): Biome, configured in biome.json.
    let code = await pnpm('exec', 'biome', 'check', '.', '--diagnostic-level=error');
    if (code !== 0) say('biome check failed: run `pnpm exec biome check --write .` and fix what it reports');
    // The release plan: every changeset parses, no 0.x package planned for a major bump.
    if (code === 0) code = await run(process.execPath, [join(root, 'scripts', 'changesets-check.mjs')]);
    if (code === 0)
      code = await turboSteps('building, type-checking and linting', [
        'build',
        'typecheck',
        'lint',
        '--output-logs=errors-only',
        ...rest,
      ]);
    if (code === 0)
      code = await turboSteps('testing', [
        'test',
        '--output-logs=full',
        '--',
        '--reporter=default',
        '--reporter=json',
        '--outputFile.json=.vitest-report.json',
      ]);
    const totals = { passed: 0, failed: 0, skipped: 0 };
    // What failed, by name, at the end (a CI log is often read from its tail): the file, the test's
    // full name and the first line of its error.
    const failures = [];
    for (const f of reportFiles()) {
      try {
        const r = JSON.parse(readFileSync(f, 'utf8'));
        for (const file of r.testResults ?? []) {
          const where = relative(root, file.name ?? f);
          const bad = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
          for (const t of bad) failures.push(`${where} > ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
          if (bad.length === 0 && file.status === 'failed') failures.push(`${where}: ${firstLine(file.message)}`);
        }
        totals.passed += r.numPassedTests ?? 0;
        totals.failed +=
          (r.numFailedTests ?? 0) +
          (r.numRuntimeErrorTestSuites ?? 0) +
          (r.numFailedTestSuites && !r.numFailedTests ? r.numFailedTestSuites : 0);
        totals.skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
      } catch {
        totals.failed++;
      }
    }
    if (code === 0) code = await run(process.execPath, [join(root, 'scripts', 'pack-check.mjs')]);
    if (code !== 0 && totals.failed === 0) totals.failed = 1; // a build, lint or pack failure counts as a failure
    for (const line of failures.slice(0, 20)) console.log(`failed: ${line}`);
    console.log(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
    return code;
  },
};

if (!tasks[task]) {
  console.error(`unknown task ${task}; one of: ${Object.keys(tasks).join(', ')}`);
  process.exit(2);
}
const code = await tasks[task]();
// pnpm's reporter is silent: say which task failed (the step's own output above says why).
if (code !== 0 && task !== 'test') console.error(`${task}: failed with exit code ${code}`);
process.exit(code);
