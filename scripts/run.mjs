#!/usr/bin/env node
// Entry point for every root script, so that `npm run <task>` works on a machine that has only
// Node 20 and npm: it finds pnpm (or runs the pinned one through npx), installs the workspace
// when needed, then runs the task. `pnpm <task>` goes through here too.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pinned = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager; // "pnpm@x.y.z"
const pinnedVersion = pinned.split('@')[1];

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', shell: false, ...opts });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function pnpmCommand() {
  const probe = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (probe.status === 0 && probe.stdout.trim() === pinnedVersion) return ['pnpm', []];
  return ['npx', ['-y', pinned]];
}

const [pnpmBin, pnpmPre] = pnpmCommand();
const pnpm = (...args) => run(pnpmBin, [...pnpmPre, ...args]);

function ensureInstalled() {
  const marker = join(root, 'node_modules', '.modules.yaml');
  const lock = join(root, 'pnpm-lock.yaml');
  if (existsSync(marker) && existsSync(lock) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  const frozen = process.env.CI ? ['--frozen-lockfile'] : [];
  const code = pnpm('install', ...frozen);
  if (code !== 0) process.exit(code);
}

function reportFiles() {
  const files = [];
  for (const group of ['packages', 'apps', 'bench']) {
    const dir = join(root, group);
    if (!existsSync(dir)) continue;
    const candidates = group === 'bench' ? [dir] : readdirSync(dir).map((d) => join(dir, d));
    for (const d of candidates) if (existsSync(join(d, '.vitest-report.json'))) files.push(join(d, '.vitest-report.json'));
  }
  return files;
}

const task = process.argv[2];
// `npm run X -- --flag` hands us `--flag`, `pnpm X -- --flag` hands us `-- --flag`: accept both.
const rest = process.argv.slice(3);
if (rest[0] === '--') rest.shift();
ensureInstalled();

const tasks = {
  // Build what the demo needs, then start it on Streamable HTTP (PORT, default 3000).
  dev: () => pnpm('--filter', '@mcp-tether/demo', 'run', 'dev', ...rest),
  'demo:client': () => pnpm('--filter', '@mcp-tether/demo', 'run', 'client', ...rest),
  conformance: () => pnpm('--filter', '@mcp-tether/demo', 'run', 'conformance', ...rest),
  bench: () => pnpm('--filter', '@mcp-tether/bench', 'run', 'bench', ...rest),
  build: () => pnpm('exec', 'turbo', 'run', 'build', ...rest),
  typecheck: () => pnpm('exec', 'turbo', 'run', 'typecheck', ...rest),
  lint: () => pnpm('exec', 'turbo', 'run', 'lint', ...rest),
  // The one test command: build, package checks, type checks, every package's tests, then the
  // packed-tarball install check. Ends with one line summing every vitest run.
  test: () => {
    for (const f of reportFiles()) rmSync(f, { force: true });
    let code = pnpm('exec', 'turbo', 'run', 'build', 'typecheck', 'lint', '--output-logs=errors-only', ...rest);
    if (code === 0) code = pnpm('exec', 'turbo', 'run', 'test', '--output-logs=full', '--', '--reporter=default', '--reporter=json', '--outputFile.json=.vitest-report.json');
    const totals = { passed: 0, failed: 0, skipped: 0 };
    for (const f of reportFiles()) {
      try {
        const r = JSON.parse(readFileSync(f, 'utf8'));
        totals.passed += r.numPassedTests ?? 0;
        totals.failed += (r.numFailedTests ?? 0) + (r.numRuntimeErrorTestSuites ?? 0) + (r.numFailedTestSuites && !r.numFailedTests ? r.numFailedTestSuites : 0);
        totals.skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
      } catch {
        totals.failed++;
      }
    }
    if (code === 0) code = run(process.execPath, [join(root, 'scripts', 'pack-check.mjs')]);
    if (code !== 0 && totals.failed === 0) totals.failed = 1; // a build, lint or pack failure counts as a failure
    console.log(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
    return code;
  },
};

if (!tasks[task]) {
  console.error(`unknown task ${task}; one of: ${Object.keys(tasks).join(', ')}`);
  process.exit(2);
}
process.exit(tasks[task]());
