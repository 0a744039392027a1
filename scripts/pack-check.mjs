#!/usr/bin/env node
// Package hygiene, from the packed tarballs (`pnpm pack`, as `npm run pack` makes them), in empty
// projects that have only what a user would install:
//
// 1. Every publishable package (packages/*/package.json without `private`: a new package is picked
//    up with no entry here) installs ALONE (with core and the @mcp-tether packages it depends on)
//    beside each SDK line it declares as a peer, at the version the workspace tests (core's
//    devDependencies), and its entry point loads through `import` and `require` (on line `id`, the
//    `./<id>` subpath when there is one: @mcp-tether/testing's `.` is v1's kit, `./v2` v2's). Then, if
//    the package has one, its smoke scenario makes real, wrapped tool calls there: `pack-smoke.mjs`
//    with `export default async function (sdk) {...}`, written once for both lines and run by
//    scripts/pack-smoke.mjs on each (v1: @modelcontextprotocol/sdk + zod only; v2:
//    @modelcontextprotocol/server + client + zod only, both eras). A package may instead keep two
//    standalone scripts (no default export): pack-smoke.mjs for v1, pack-smoke-v2.mjs for v2; and
//    a standalone pack-smoke-both.mjs runs in a project with both SDK lines (e.g. one endpoint
//    serving both eras).
// 2. The LOWEST version of each declared SDK range (core's peerDependencies, e.g. ^1.30.0 →
//    1.30.0), when it differs from the tested one: every package in one project beside that SDK
//    version, every smoke script of that line run there.
// 3. The root README's examples, extracted from README.md (the code block after each
//    `<!-- pack-check: FILE -->` marker), in one project with every tarball, the SDK, zod and tsx
//    — the install the README shows — run as the README says (`npx tsx client.ts`, ...).
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lowestOf, packAll, publishablePackages, root, sh } from './lib/workspace.mjs';

const packages = publishablePackages();
const core = packages.find((p) => p.name === '@mcp-tether/core');
const devDeps = core.manifest.devDependencies;
const peers = core.manifest.peerDependencies;
const zod = `zod@${devDeps.zod}`;
const tsx = `tsx@${JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devDependencies.tsx}`;

/** The SDK lines: what a project of that line installs, at a given version, and the smoke script it runs. */
const LINES = {
  v1: {
    peer: '@modelcontextprotocol/sdk',
    peers: ['@modelcontextprotocol/sdk'],
    script: 'pack-smoke.mjs',
    install: (v) => [`@modelcontextprotocol/sdk@${v}`, zod],
  },
  v2: {
    peer: '@modelcontextprotocol/server',
    peers: ['@modelcontextprotocol/server', '@modelcontextprotocol/client'],
    script: 'pack-smoke-v2.mjs',
    install: (v) => [`@modelcontextprotocol/server@${v}`, `@modelcontextprotocol/client@${v}`, zod],
  },
};
const RUNNER = join(root, 'scripts', 'pack-smoke.mjs');

/** The smoke of package `p` on SDK line `id`: a scenario for the shared runner, a standalone script, or none. */
function smokeOf(p, id) {
  const scenario = join(p.dir, 'pack-smoke.mjs');
  if (existsSync(scenario) && /^export default /m.test(readFileSync(scenario, 'utf8')))
    return { file: scenario, scenario: true };
  const script = join(p.dir, LINES[id].script);
  return existsSync(script) ? { file: script, scenario: false } : undefined;
}
for (const line of Object.values(LINES)) {
  line.tested = devDeps[line.peer];
  line.lowest = lowestOf(peers[line.peer]);
}

const npmInstall = (project, specs) =>
  sh(
    'npm',
    ['install', '--no-audit', '--no-fund', '--no-update-notifier', '--prefer-offline', '--loglevel=error', ...specs],
    project,
  );

function newProject() {
  const project = mkdtempSync(join(tmpdir(), 'tether-consumer-'));
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '0.0.0', private: true, type: 'module' }),
  );
  return project;
}

function runNode(project, args, { timeout = 60_000 } = {}) {
  const r = spawnSync(process.execPath, args, { cwd: project, encoding: 'utf8', timeout });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}`, status: r.status ?? r.signal };
}

/** A smoke copied into `project` and run on SDK line `id`: it must exit 0 and print `ok`. */
function runSmoke(project, smoke, id) {
  const target = join(project, `smoke-${Math.random().toString(36).slice(2, 8)}.mjs`);
  copyFileSync(smoke.file, target);
  if (smoke.scenario && !existsSync(join(project, 'pack-smoke.mjs')))
    copyFileSync(RUNNER, join(project, 'pack-smoke.mjs'));
  const r = runNode(project, smoke.scenario ? ['pack-smoke.mjs', target, id] : [target]);
  if (!r.ok || !/\bok\b/.test(r.out))
    throw new Error(`smoke ${smoke.file} on SDK ${id} failed (${r.status})\n${r.out}`);
}

/** The `@mcp-tether/*` packages `p` depends on, recursively, and itself. */
function closure(p, seen = new Set()) {
  if (seen.has(p.name)) return seen;
  seen.add(p.name);
  for (const dep of Object.keys(p.manifest.dependencies ?? {})) {
    const q = packages.find((x) => x.name === dep);
    if (q) closure(q, seen);
  }
  return seen;
}

/** The SDK lines a package serves: the ones it declares as peers; a package declaring none serves both (through core). */
function linesOf(p) {
  const declared = Object.entries(LINES).filter(([, l]) => l.peers.some((name) => p.manifest.peerDependencies?.[name]));
  return declared.length ? declared : Object.entries(LINES);
}

// ------------------------------------------------------------------ the README examples

/** `FILE → code` for every code block preceded by `<!-- pack-check: FILE -->`. */
function readmeFiles(markdown) {
  const files = new Map();
  const re = /<!--\s*pack-check:\s*(\S+)\s*-->\s*\n```\w*\n([\s\S]*?)\n```/g;
  for (const m of markdown.matchAll(re)) files.set(m[1], `${m[2]}\n`);
  return files;
}

/** What each README command must print (a problem description, or undefined). */
const README_RUNS = {
  // Quick start: progress lines, the result, then the cancelled call.
  'client.ts': (stdout) => {
    const lines = stdout.split('\n');
    const progress = lines.filter((l) => l.startsWith('progress ')).map((l) => Number(l.split(' ')[1].split('/')[0]));
    if (progress.length < 2) return `expected at least 2 progress lines, got ${progress.length}`;
    if (progress.some((v, i) => i > 0 && !(v > progress[i - 1])))
      return `progress not strictly increasing: ${progress.join(', ')}`;
    if (!stdout.includes("text: 'report: 5 rows'")) return 'no "report: 5 rows" result';
    if (!/^cancelled: /m.test(stdout)) return 'the second call was not cancelled';
    return undefined;
  },
  // Second example: every deploy asked and done; deploys to the same environment never overlap.
  'deploy-client.ts': (stdout) => {
    const asked = stdout.match(/^asked: Deploy /gm)?.length ?? 0;
    if (asked !== 3) return `expected 3 questions, got ${asked}`;
    for (const done of ['Deployed v1 to staging.', 'Deployed v2 to staging.', 'Deployed v1 to production.']) {
      if (!stdout.includes(done)) return `missing "${done}"`;
    }
    const staging = stdout
      .split('\n')
      .filter((l) => l.startsWith('log info:') || l.startsWith('log notice:'))
      .map((l) => JSON.parse(l.slice(l.indexOf(':') + 2)))
      .filter((d) => d.env === 'staging')
      .map((d) => `${d.step}`);
    if (staging.join() !== 'start,done,start,done')
      return `staging deploys overlapped or logs are missing: ${staging.join(', ')}`;
    return undefined;
  },
};

let failures = 0;
let passed = 0;
function check(label, fn) {
  const t0 = Date.now();
  try {
    fn();
    passed++;
    console.log(`pack-check: ${label}: ok (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (err) {
    failures++;
    console.error(`pack-check: ${label}: FAILED\n${err.message}`);
  } finally {
    if (project) removeLater(project);
    project = undefined;
  }
}

const out = mkdtempSync(join(tmpdir(), 'tether-pack-'));
// A consumer project is deleted as soon as its check is done, by an `rm -rf` running beside the
// next checks (deleting node_modules trees is slow on a busy disk; nothing waits for it until the end).
const removals = [];
function removeLater(dir) {
  if (process.platform === 'win32') return rmSync(dir, { recursive: true, force: true });
  removals.push(
    new Promise((done) =>
      spawn('rm', ['-rf', dir], { stdio: 'ignore' })
        .once('close', done)
        .once('error', () => done(rmSync(dir, { recursive: true, force: true }))),
    ),
  );
}
let project; // the one of the running check
try {
  const tarballs = packAll(packages, out);
  const all = [...tarballs.values()];

  // 1. each package alone, per SDK line, at the tested version
  for (const p of packages) {
    const ours = [...closure(core, closure(p))].map((n) => tarballs.get(n));
    for (const [id, line] of linesOf(p)) {
      // a package whose entry serves one SDK line has a subpath named after the other (e.g. `./v2`)
      const entry = p.manifest.exports?.[`./${id}`]
        ? `${p.name}/${id}`
        : p.manifest.exports?.['.']
          ? p.name
          : undefined;
      check(`${p.name} alone with SDK ${id} ${line.tested}`, () => {
        project = newProject();
        npmInstall(project, [...new Set(ours), ...line.install(line.tested)]);
        if (entry) {
          writeFileSync(join(project, 'load.mjs'), `await import(${JSON.stringify(entry)});\n`);
          writeFileSync(join(project, 'load.cjs'), `require(${JSON.stringify(entry)});\n`);
          for (const f of ['load.mjs', 'load.cjs']) {
            const r = runNode(project, [f]);
            if (!r.ok) throw new Error(`${f}: loading ${entry} failed (${r.status})\n${r.out}`);
          }
        }
        const smoke = smokeOf(p, id);
        if (smoke) runSmoke(project, smoke, id);
      });
    }
    const both = join(p.dir, 'pack-smoke-both.mjs');
    if (existsSync(both)) {
      check(`${p.name} with both SDK lines (${LINES.v1.tested}, ${LINES.v2.tested})`, () => {
        project = newProject();
        npmInstall(project, [
          ...new Set([...ours, ...LINES.v1.install(LINES.v1.tested), ...LINES.v2.install(LINES.v2.tested)]),
        ]);
        runSmoke(project, { file: both, scenario: false }, 'both');
      });
    }
  }

  // 2. the lowest version of each declared SDK range, every package together
  for (const [id, line] of Object.entries(LINES)) {
    if (!line.lowest || line.lowest === line.tested) continue;
    const smokes = packages
      .filter((p) => linesOf(p).some(([l]) => l === id))
      .map((p) => smokeOf(p, id))
      .filter(Boolean);
    check(
      `every package with SDK ${id} ${line.lowest} (lowest of ${peers[line.peer]}): ${smokes.length} smokes`,
      () => {
        project = newProject();
        npmInstall(project, [...all, ...line.install(line.lowest)]);
        const installed = JSON.parse(
          readFileSync(join(project, 'node_modules', ...line.peer.split('/'), 'package.json'), 'utf8'),
        ).version;
        if (installed !== line.lowest) throw new Error(`${line.peer} ${installed} installed, expected ${line.lowest}`);
        for (const smoke of smokes) runSmoke(project, smoke, id);
      },
    );
  }

  // 3. the README's examples, as the README installs and runs them
  check('README examples (every tarball + @modelcontextprotocol/sdk + zod + tsx)', () => {
    const files = readmeFiles(readFileSync(join(root, 'README.md'), 'utf8'));
    for (const name of Object.keys(README_RUNS))
      if (!files.has(name)) throw new Error(`README.md has no <!-- pack-check: ${name} --> block`);
    if (!files.has('app.ts')) throw new Error('README.md has no <!-- pack-check: app.ts --> block');
    project = newProject();
    // Both SDK lines: the one-page server (app.ts) serves 2026-07-28 requests through SDK 2.x.
    npmInstall(project, [...all, `${LINES.v1.peer}@${LINES.v1.tested}`, `${LINES.v2.peer}@${LINES.v2.tested}`, zod]);
    npmInstall(project, ['-D', tsx]);
    for (const [name, text] of files) writeFileSync(join(project, name), text);
    for (const [name, expect] of Object.entries(README_RUNS)) {
      const r = spawnSync('npx', ['tsx', name], { cwd: project, encoding: 'utf8', timeout: 60_000 });
      const text = `${r.stdout}${r.stderr}`;
      if (r.status !== 0) throw new Error(`npx tsx ${name} exited ${r.status ?? r.signal}\n${text}`);
      const problem = expect(r.stdout);
      if (problem) throw new Error(`npx tsx ${name}: ${problem}\n${text}`);
    }
    // The one-page server (issue 23's "Done when"): scripts/readme-server.mjs starts `npx tsx app.ts`,
    // drives it with an SDK 1.x session and raw 2026-07-28 requests, runs follow.ts, then SIGTERM.
    copyFileSync(join(root, 'scripts', 'readme-server.mjs'), join(project, 'readme-server.mjs'));
    const served = runNode(project, ['readme-server.mjs'], { timeout: 240_000 });
    if (!served.ok || !/\bok\b/.test(served.out))
      throw new Error(`the one-page server (app.ts, follow.ts) failed (${served.status})\n${served.out}`);
  });
} finally {
  rmSync(out, { recursive: true, force: true });
}

await Promise.all(removals);
console.log(`pack-check: ${passed} checks ok, ${failures} broken`);
process.exit(failures ? 1 : 0);
