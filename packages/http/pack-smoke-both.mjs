// Smoke test of the packed tarball in an empty project with both SDK lines, run by
// scripts/pack-check.mjs: the README's example is taken from the installed package's README.md
// AS WRITTEN, run in a child process (PORT=0), and driven on both eras at its one endpoint: an SDK
// 1.x client (2025-era session) and an SDK 2.x client pinned to 2026-07-28. Then SIGTERM: the
// example's graceful shutdown must exit 0. Prints `ok` and exits 0, else exits 1.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';

const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve('@mcp-tether/http/package.json'));
const readme = readFileSync(join(pkgDir, 'README.md'), 'utf8');
const example = /## Example[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
if (!example) {
  console.error('no example in README.md');
  process.exit(1);
}
writeFileSync('server.mjs', example);

const child = spawn(process.execPath, ['server.mjs'], {
  env: { ...process.env, PORT: '0' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const fail = (msg) => {
  console.error(msg);
  child.kill('SIGKILL');
  process.exit(1);
};
setTimeout(() => fail('timed out'), 30_000).unref();
const url = await new Promise((resolve) => {
  let out = '';
  child.stdout.on('data', (c) => {
    out += c;
    const m = /MCP endpoint: (\S+)/.exec(out);
    if (m) resolve(new URL(m[1]));
  });
  child.once('exit', (code) => fail(`the example exited (${code}) before listening`));
});

const v1 = new Client({ name: 'smoke-v1', version: '0' });
await v1.connect(new StreamableHTTPClientTransport(url));
const a = await v1.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
const v2 = new ClientV2({ name: 'smoke-v2', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await v2.connect(new TransportV2(url));
const b = await v2.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
await v1.close();
await v2.close();
const ta = a.content?.[0]?.text;
const tb = b.content?.[0]?.text;
if (ta !== '3 (legacy)' || tb !== '5 (modern)') fail(`unexpected results: ${ta} / ${tb}`);

child.removeAllListeners('exit');
const code = await new Promise((resolve) => {
  child.once('exit', (c) => resolve(c));
  child.kill('SIGTERM');
});
if (code !== 0) fail(`the example exited with ${code} on SIGTERM`);
console.log(`ok (2025-era: ${ta}; 2026-07-28: ${tb}; SIGTERM: exit 0)`);
process.exit(0);
