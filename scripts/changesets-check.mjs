#!/usr/bin/env node
// Release-plan check (run by `npm test` after Biome): every changeset parses, and no 0.x package is
// planned for a major bump (with 0.x peers, changesets would otherwise turn a dependency's minor
// into a 1.0.0 of its dependent). Uses `changeset status --output`, the CLI's own release plan.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(join(tmpdir(), 'tether-changesets-'));
const out = join(dir, 'plan.json');
try {
  const r = spawnSync(
    'pnpm',
    ['exec', 'changeset', 'status', `--output=${relative(root, out)}` /* the CLI joins it to the cwd */],
    { cwd: root, encoding: 'utf8' },
  );
  let plan;
  try {
    plan = JSON.parse(readFileSync(out, 'utf8'));
  } catch {
    console.error(`changesets: \`changeset status\` failed (exit ${r.status}):\n${r.stderr || r.stdout}`);
    process.exit(1);
  }
  const majors = plan.releases.filter((x) => x.type === 'major' && x.oldVersion.startsWith('0.'));
  if (majors.length) {
    console.error(
      `changesets: major bump planned for 0.x package(s): ${majors.map((x) => `${x.name} ${x.oldVersion} → ${x.newVersion}`).join(', ')}` +
        ' (a workspace peer range that a minor bump leaves? use "workspace:>=0.1.0 <1")',
    );
    process.exit(1);
  }
  console.log(`changesets: ${plan.changesets.length} changesets, ${plan.releases.length} releases planned, none major`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
