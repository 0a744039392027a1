// Inclusive instructions per call (or request) of the JIT-compiled functions in a callgrind window
// dump, named from V8's perf map (runs with --perf-basic-prof; `--instructions --http --keep` saves
// both), filtered by a substring of their name or file. Inlined functions count in their caller;
// a function that calls itself (or appears under several names) may count twice.
// Usage: node inclusive.mjs <dump> <perf map> <N> [filter=packages/] [top=30]
import { execFileSync } from 'node:child_process';
import { readPerfMap } from './perfmap.mjs';

const [dump, mapFile, nArg, filter = 'packages/', topArg] = process.argv.slice(2);
const N = Number(nArg);
const top = Number(topArg ?? 30);
const name = readPerfMap(mapFile);
const out = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', dump], {
  encoding: 'utf8',
  maxBuffer: 1 << 28,
});
const total = Number(/([\d,]+) \([^)]*\)\s+PROGRAM TOTALS/.exec(out)?.[1].replace(/,/g, '') ?? NaN);
const byName = new Map();
for (const line of out.split('\n')) {
  const r = /^\s*([\d,]+)\s+\([^)]*\)\s+\?\?\?:(0x[0-9a-f]+)(?:'\d+)? \[/.exec(line);
  if (!r) continue;
  const n = name(parseInt(r[2], 16));
  if (!n || !n.includes(filter)) continue;
  const ir = Number(r[1].replace(/,/g, ''));
  // the same function under several code objects (tiers, recompiles): the largest inclusive count
  byName.set(n, Math.max(byName.get(n) ?? 0, ir));
}
console.log(`total per call: ${(total / N).toFixed(0)}`);
console.log('| function | inclusive instr/call |\n|---|---:|');
for (const [n, ir] of [...byName].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(
    `| ${n.replace(/^JS:/, '').replace(/file:\/\/\/\S*?\/(packages|node_modules)\//, '$1/')} | ${(ir / N).toFixed(0)} |`,
  );
