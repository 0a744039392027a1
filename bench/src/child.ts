/**
 * Runs one scenario in a fresh process (its own heap and JIT state) and writes its result as JSON
 * to the file named by the third argument: `node --expose-gc dist/child.js <scenario> '<params json>' <out file>`.
 */
import { writeFileSync } from 'node:fs';

const [name, paramsJson, outFile] = process.argv.slice(2);
if (!name || !paramsJson || !outFile) {
  console.error('usage: child.ts <scenario> <params json> <out file>');
  process.exit(2);
}
if (!/^[a-z-]+$/.test(name)) throw new Error(`bad scenario name ${name}`);
const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
const mod = (await import(`./scenarios/${name}.${ext}`)) as { run(p: unknown): Promise<unknown> };
const result = await mod.run(JSON.parse(paramsJson));
writeFileSync(outFile, JSON.stringify(result));
// Servers and clients are closed by each scenario; exit anyway so a stray handle cannot hang the run.
process.exit(0);
