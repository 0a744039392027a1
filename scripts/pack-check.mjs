#!/usr/bin/env node
// Package hygiene: every publishable package installs ALONE from its packed tarball into an empty
// project that has only an SDK line (and zod), and its `pack-smoke*.mjs` script makes a real,
// wrapped tool call there.
//   pack-smoke.mjs     → project with @modelcontextprotocol/sdk (v1) only
//   pack-smoke-v2.mjs  → project with @modelcontextprotocol/server + client (v2) only
//   pack-smoke-both.mjs → project with both SDK lines (e.g. @mcp-tether/http: both eras on one endpoint)
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SDK_LINES = {
  'pack-smoke.mjs': ['@modelcontextprotocol/sdk@1.32.2', 'zod@^4.1.0'],
  'pack-smoke-v2.mjs': ['@modelcontextprotocol/server@2.4.0', '@modelcontextprotocol/client@2.4.0', 'zod@^4.2.0'],
  'pack-smoke-both.mjs': ['@modelcontextprotocol/sdk@1.32.2', '@modelcontextprotocol/server@2.4.0', '@modelcontextprotocol/client@2.4.0', 'zod@^4.2.0'],
};

function sh(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed with ${r.status}\n${r.stdout}\n${r.stderr}`);
  }
  return r.stdout;
}

const pnpmProbe = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
const pnpm = pnpmProbe.status === 0 ? ['pnpm', []] : ['npx', ['-y', 'pnpm@10.34.9']];

const packagesDir = join(root, 'packages');
const packages = readdirSync(packagesDir)
  .map((d) => join(packagesDir, d))
  .filter((d) => existsSync(join(d, 'package.json')))
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }))
  .filter((p) => !p.manifest.private);

const out = mkdtempSync(join(tmpdir(), 'tether-pack-'));
const tarballs = new Map();
for (const p of packages) {
  const stdout = sh(pnpm[0], [...pnpm[1], 'pack', '--pack-destination', out], p.dir);
  const file = stdout.trim().split('\n').filter((l) => l.endsWith('.tgz')).pop();
  tarballs.set(p.manifest.name, file.startsWith('/') ? file : join(out, file));
}

let failures = 0;
let passed = 0;
for (const p of packages) {
  for (const [script, sdk] of Object.entries(SDK_LINES)) {
    if (!existsSync(join(p.dir, script))) continue;
    const project = mkdtempSync(join(tmpdir(), 'tether-consumer-'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '0.0.0', private: true, type: 'module' }));
    const ours = [tarballs.get('@mcp-tether/core'), tarballs.get(p.manifest.name)].filter((v, i, a) => v && a.indexOf(v) === i);
    const label = `${p.manifest.name} (${script})`;
    try {
      sh('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...ours, ...sdk], project);
      copyFileSync(join(p.dir, script), join(project, 'smoke.mjs'));
      const r = spawnSync(process.execPath, ['smoke.mjs'], { cwd: project, encoding: 'utf8', timeout: 60_000 });
      if (r.status !== 0 || !/\bok\b/.test(r.stdout)) throw new Error(`smoke script failed (${r.status})\n${r.stdout}\n${r.stderr}`);
      console.log(`pack-check: ${label}: installs alone and works`);
      passed++;
    } catch (err) {
      failures++;
      console.error(`pack-check: ${label}: FAILED\n${err.message}`);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  }
}
rmSync(out, { recursive: true, force: true });
console.log(`pack-check: ${passed} package installs ok, ${failures} broken`);
process.exit(failures ? 1 : 0);
