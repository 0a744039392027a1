#!/usr/bin/env node
// Installable tarballs of every publishable package, until they are on the npm registry:
//
//   npm run pack [-- --out DIR]     (default DIR: tarballs/ at the repository root)
//
// `npm run pack` builds the packages first (scripts/run.mjs), then this packs each one with
// `pnpm pack`, which rewrites the `workspace:^` ranges into real versions, so the tarballs install
// like the published packages will: `npm i /path/to/tarballs/*.tgz @modelcontextprotocol/sdk zod`.
// (Installing a workspace folder by path instead links it with its own node_modules, and so a
// second copy of the SDK.)
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { packAll, publishablePackages, root } from './lib/workspace.mjs';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: { out: { type: 'string', default: join(root, 'tarballs') } },
  strict: true,
});
const out = resolve(values.out);
mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) if (f.startsWith('mcp-tether-') && f.endsWith('.tgz')) rmSync(join(out, f));

const packages = publishablePackages();
const tarballs = packAll(packages, out);
console.log(`pack: ${tarballs.size} tarballs in ${out}`);
for (const [name, file] of tarballs) console.log(`  ${name.padEnd(26)} ${relative(out, file)}`);
console.log(
  `\nInstall them in your project (an SDK line and zod beside them):\n  npm i ${join(out, '*.tgz')} @modelcontextprotocol/sdk zod`,
);
