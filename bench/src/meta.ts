/** What a run writes besides its results: the versions measured, and the README's sections of results. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The versions of the packages measured beside tether, read from the bench package's node_modules. */
export function versions(benchRoot: string) {
  const v = (name: string) => {
    try {
      // Resolve from the bench package, where these are dependencies.
      const pkg = join(benchRoot, 'node_modules', name, 'package.json');
      return (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
    } catch {
      return 'unknown';
    }
  };
  return {
    '@modelcontextprotocol/sdk': v('@modelcontextprotocol/sdk'),
    fastmcp: v('fastmcp'),
    tinybench: v('tinybench'),
    zod: v('zod'),
  };
}

/**
 * Put `body` into bench/README.md between `<!-- bench:<name>:start -->` and `<!-- bench:<name>:end -->`.
 * @returns whether it did (false: no README, or not both markers in order)
 */
export function writeReadmeSection(benchRoot: string, name: string, body: string): boolean {
  const file = join(benchRoot, 'README.md');
  if (!existsSync(file)) return false;
  const text = readFileSync(file, 'utf8');
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a) return false;
  writeFileSync(file, `${text.slice(0, a + start.length)}\n${body}\n${text.slice(b)}`);
  return true;
}

/** Put the latest table into README.md between the bench results markers. */
export function updateReadme(md: string, benchRoot: string, log: (msg: string) => void) {
  // Demote the report's headings by two levels so they sit under the README's Performance section.
  if (writeReadmeSection(benchRoot, 'results', md.replace(/^(#+) /gm, '$1## ')))
    log('updated the Performance section of bench/README.md');
}
