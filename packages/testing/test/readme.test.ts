/** The README's example, run as written: the ts block after "## Example" in README.md. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const block = /## Example\n\n```ts\n([\s\S]*?)\n```/.exec(readme)?.[1];
if (!block) throw new Error('README.md has no ts block after "## Example"');
const dir = fileURLToPath(new URL('../.tmp/', import.meta.url));
mkdirSync(dir, { recursive: true });
writeFileSync(`${dir}readme-example.ts`, `${block}\n`);
await import(`${dir}readme-example.ts`);
