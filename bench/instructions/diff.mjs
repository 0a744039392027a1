// Per-function difference of two callgrind window dumps (<out>.2 files), per call: which native and
// builtin functions a stack pays above another. JIT code has no symbols (addresses differ between
// runs): it is summed as "(JIT code)", unless the runs had V8's --perf-basic-prof and their maps are
// given (MAP_A, MAP_B = /tmp/perf-<pid>.map): then JIT code is named by function (V8's prefixes:
// '*' TurboFan, '+' Maglev, '^' Sparkplug, '~' interpreted).
// Usage: [MAP_A=.. MAP_B=..] node diff.mjs <base.2> <other.2> <N> [top=40]
import { execFileSync } from 'node:child_process';
import { readPerfMap } from './perfmap.mjs';
const [a, b, nArg, topArg] = process.argv.slice(2);
const maps = [process.env.MAP_A, process.env.MAP_B].map((f) => (f ? readPerfMap(f) : undefined));
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
    if (/^0x[0-9a-f]+$/.test(name)) name = (map?.(parseInt(name, 16)) ?? '(JIT code)').replace(/^JS:/, '');
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
