// Callers of one function in a callgrind dump, with JIT addresses named from a V8 perf map.
// Usage: node callers.mjs <dump> <perf map> <function substring> <N>
import { execFileSync } from 'node:child_process';
import { readPerfMap } from './perfmap.mjs';
const [dump, mapFile, fn, nArg] = process.argv.slice(2);
const N = Number(nArg);
const name = readPerfMap(mapFile);
const out = execFileSync('callgrind_annotate', ['--tree=caller', '--inclusive=no', '--threshold=100', dump], {
  encoding: 'utf8',
  maxBuffer: 1 << 28,
});
const blocks = out.split(/\n\s*\n/);
for (const b of blocks) {
  const lines = b.split('\n');
  const star = lines.findIndex((l) => /^\s*[\d,]+ \([^)]*\)\s+\*\s/.test(l) && l.includes(fn));
  if (star < 0) continue;
  for (const l of lines) {
    const r = /^\s*([\d,]+)\s+\([^)]*\)\s+([<*])\s+(\S+?)(?:'\d+)?(?: \(([\d,]+)x\))? \[/.exec(l);
    if (!r) continue;
    let f = r[3].replace(/^\?\?\?:/, '');
    if (/^0x[0-9a-f]+$/.test(f)) f = (name(parseInt(f, 16)) ?? f).replace(/^JS:/, '');
    console.log(
      `${(Number(r[1].replace(/,/g, '')) / N).toFixed(0).padStart(7)} ${r[2]} ${r[4] ? (Number(r[4].replace(/,/g, '')) / N).toFixed(1) + 'x ' : ''}${f.slice(0, 140)}`,
    );
  }
  console.log('');
}
