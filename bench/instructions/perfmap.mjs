// V8's perf map (`--perf-basic-prof` writes /tmp/perf-<pid>.map: "<start hex> <size hex> <name>" per
// code object), read once and searched by address: the one reader of diff.mjs, inclusive.mjs and
// callers.mjs.
import { readFileSync } from 'node:fs';

/**
 * A lookup from a code address to the name of the JIT function that holds it (V8's prefixes: '*'
 * TurboFan, '+' Maglev, '^' Sparkplug, '~' interpreted), or undefined outside every code object.
 * Code space is reused: of rows with equal starts the latest in the log wins (a stable sort keeps log order).
 * @param {string} file the map's path
 * @returns {(addr: number) => string | undefined}
 */
export function readPerfMap(file) {
  const rows = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const [start, size, ...name] = l.split(' ');
      return [parseInt(start, 16), parseInt(size, 16), name.join(' ')];
    })
    .sort((x, y) => x[0] - y[0]);
  return (addr) => {
    let lo = 0;
    let hi = rows.length - 1;
    let best;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (rows[mid][0] <= addr) {
        best = rows[mid];
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return best && addr < best[0] + best[1] ? best[2] : undefined;
  };
}
