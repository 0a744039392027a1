// How much of a callgrind window is V8 compiling (TurboFan/Maglev, lazy and baseline compiles), from
// the inclusive counts of V8's `Compiler::` entry points. A window that still compiles was not at
// the optimized steady state: its total is an upper bound, total minus compile a closer estimate.
// Usage: node jit-share.mjs <N> <dump>...   (prints per dump: total, compile, rest, per call)
import { execFileSync } from 'node:child_process';

const ENTRY =
  /^\s*([\d,]+) \([^)]*\)\s+\?\?\?:v8::internal::Compiler::(CompileOptimized|Compile|CompileBaseline|CompileSharedWithBaseline)\(/;

/** Instructions of a window dump: its total and what V8's compiler entry points took inclusively. */
export function jitShare(dump) {
  const out = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', dump], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  const total = Number(/([\d,]+) \([^)]*\)\s+PROGRAM TOTALS/.exec(out)?.[1].replace(/,/g, '') ?? Number.NaN);
  const seen = new Map(); // the largest line per entry point (recursive entries are listed again with 'N)
  for (const line of out.split('\n')) {
    const r = ENTRY.exec(line);
    if (!r) continue;
    const ir = Number(r[1].replace(/,/g, ''));
    seen.set(r[2], Math.max(seen.get(r[2]) ?? 0, ir));
  }
  const compile = [...seen.values()].reduce((a, b) => a + b, 0);
  return { total, compile };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [nArg, ...dumps] = process.argv.slice(2);
  const n = Number(nArg);
  for (const d of dumps) {
    const { total, compile } = jitShare(d);
    console.log(
      `${d}\ttotal ${(total / n).toFixed(0)}\tcompile ${(compile / n).toFixed(0)} (${((compile / total) * 100).toFixed(1)} %)\trest ${((total - compile) / n).toFixed(0)}`,
    );
  }
}
