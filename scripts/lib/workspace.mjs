// What scripts/pack.mjs and scripts/pack-check.mjs share: the publishable packages (read from each
// packages/*/package.json, so a new package is picked up with no entry anywhere), the pnpm to run,
// and packing every package into installable tarballs (`pnpm pack` rewrites `workspace:` ranges).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
/** The pinned pnpm, e.g. `pnpm@10.34.9`. */
export const pinnedPnpm = rootManifest.packageManager;

/** [command, leading args]: pnpm from the PATH when it is the pinned one, else the pinned one through npx. */
export function pnpmCommand() {
  const probe = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (probe.status === 0 && probe.stdout.trim() === pinnedPnpm.split('@')[1]) return ['pnpm', []];
  return ['npx', ['-y', pinnedPnpm]];
}

/** Run a command to its end; its stdout, or an Error with both streams. */
export function sh(cmd, args, cwd, { timeout = 300_000, env = process.env } = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout, env });
  if (r.status !== 0) {
    throw new Error(
      `${cmd} ${args.join(' ')} (in ${cwd}) failed with ${r.status ?? r.signal}\n${r.stdout}\n${r.stderr}`,
    );
  }
  return r.stdout;
}

/**
 * Every publishable package of the workspace (packages/*, not `private`), in dependency order
 * (core first): `{ dir, name, manifest }`.
 */
export function publishablePackages() {
  const dir = join(root, 'packages');
  const list = readdirSync(dir)
    .map((d) => join(dir, d))
    .filter((d) => existsSync(join(d, 'package.json')))
    .map((d) => ({ dir: d, manifest: JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')) }))
    .filter((p) => !p.manifest.private)
    .map((p) => ({ ...p, name: p.manifest.name }));
  const core = list.filter((p) => p.name === '@mcp-tether/core');
  return [...core, ...list.filter((p) => p.name !== '@mcp-tether/core')];
}

/**
 * `pnpm pack` every package into `outDir` (the packages must be built). Returns a Map of package
 * name → absolute tarball path.
 */
export function packAll(packages, outDir) {
  const [pnpm, pre] = pnpmCommand();
  const tarballs = new Map();
  for (const p of packages) {
    const stdout = sh(pnpm, [...pre, 'pack', '--pack-destination', outDir], p.dir);
    const file = stdout
      .trim()
      .split('\n')
      .filter((l) => l.trim().endsWith('.tgz'))
      .pop()
      ?.trim();
    if (!file) throw new Error(`pnpm pack printed no tarball for ${p.name}:\n${stdout}`);
    tarballs.set(p.name, isAbsolute(file) ? file : join(outDir, file));
  }
  return tarballs;
}

/** The lowest version a range like `^1.30.0`, `~2.4.0` or `>=1.2.3` allows (plain ranges only). */
export function lowestOf(range) {
  const m = /^\s*(?:\^|~|>=)?\s*(\d+\.\d+\.\d+(?:-[\w.]+)?)\s*$/.exec(range ?? '');
  return m?.[1];
}
