#!/usr/bin/env node
// Entry point for every root script, so that `npm run <task>` works on a machine that has only
// Node 20 and npm: it finds pnpm (or runs the pinned one through npx), installs the workspace
// when needed, then runs the task. `pnpm <task>` goes through here too.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
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

const task = process.argv[2];
const rest = process.argv.slice(3);
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
  // The one test command: build, package checks, type checks and every package's tests.
  test: () => {
    const code = pnpm('exec', 'turbo', 'run', 'build', 'typecheck', 'lint', 'test', '--output-logs=errors-only', ...rest);
    if (code !== 0) return code;
    return run(process.execPath, [join(root, 'scripts', 'pack-check.mjs')]);
  },
};

if (!tasks[task]) {
  console.error(`unknown task ${task}; one of: ${Object.keys(tasks).join(', ')}`);
  process.exit(2);
}
process.exit(tasks[task]());
