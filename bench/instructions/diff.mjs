// Per-function difference of two callgrind window dumps (<out>.2 files), per call: which native and
// builtin functions a stack pays above another. JIT code has no symbols (addresses differ between
// runs): it is summed as "(JIT code)", unless the runs had V8's --perf-basic-prof and their maps are
// given (MAP_A, MAP_B = /tmp/perf-<pid>.map): then JIT code is named by function (V8's prefixes:
// '*' TurboFan, '+' Maglev, '^' Sparkplug, '~' interpreted).
// Usage: [MAP_A=.. MAP_B=..] node diff.mjs <base.2> <other.2> <N> [top=40]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
const [a, b, nArg, topArg] = process.argv.slice(2);
const readMap = (f) => {
  if (!f) return undefined;
  const rows = readFileSync(f, 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const [start, size, ...name] = l.split(' ');
      return [parseInt(start, 16), parseInt(size, 16), name.join(' ')];
    });
  rows.sort((x, y) => x[0] - y[0]);
  return rows;
};
const lookup = (rows, addr) => {
  if (!rows) return undefined;
  let lo = 0,
    hi = rows.length - 1,
    best;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid][0] <= addr) {
      best = rows[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  // the latest code object at that address wins (code space is reused): rows with equal starts are in log order
  return best && addr < best[0] + best[1] ? best[2] : undefined;
};
const maps = [readMap(process.env.MAP_A), readMap(process.env.MAP_B)];
const N = Number(nArg);
const top = Number(topArg ?? 40);
const load = (f, map) => {
  const out = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', f], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  const m = new Map();
  for (const line of out.split('\n')) {
    const r = /^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$/.exec(line);
    if (!r || r[2].includes('PROGRAM TOTALS')) continue;
    const ir = Number(r[1].replace(/,/g, ''));
    let name = r[2]
      .replace(/^\?\?\?:/, '')
      .replace(/ \[.*\]$/, '')
      .replace(/'\d+$/, '');
    if (/^0x[0-9a-f]+$/.test(name)) name = (lookup(map, parseInt(name, 16)) ?? '(JIT code)').replace(/^JS:/, '');
    m.set(name, (m.get(name) ?? 0) + ir);
  }
  return m;
};
const A = load(a, maps[0]),
  B = load(b, maps[1]);
const names = new Set([...A.keys(), ...B.keys()]);
const rows = [...names].map((n) => [
  n,
  ((B.get(n) ?? 0) - (A.get(n) ?? 0)) / N,
  (A.get(n) ?? 0) / N,
  (B.get(n) ?? 0) / N,
]);
rows.sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]));
const tot = (m) => [...m.values()].reduce((s, v) => s + v, 0) / N;
console.log(
  `per call: base ${tot(A).toFixed(0)}, other ${tot(B).toFixed(0)}, difference ${(tot(B) - tot(A)).toFixed(0)}`,
);
console.log('| function | difference | base | other |\n|---|---:|---:|---:|');
for (const [n, d, x, y] of rows.slice(0, top))
  console.log(`| ${n} | ${d.toFixed(1)} | ${x.toFixed(1)} | ${y.toFixed(1)} |`);
