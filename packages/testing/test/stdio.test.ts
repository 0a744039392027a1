import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { connectStdio, type TestClient } from '../src/index.js';

const fixture = fileURLToPath(new URL('./fixtures/stdio-server.ts', import.meta.url));
let kit: TestClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

it('stdio smoke: a real child process, a generator tool with progress, a cancel', async () => {
  kit = await connectStdio(process.execPath, ['--import', 'tsx', fixture], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
  });
  const r = await kit.callTool('count', { to: 5 }, { progressToken: 'stdio-1' });
  expect(r.content).toEqual([{ type: 'text', text: 'counted to 5' }]);
  expect(kit.wire.progress('stdio-1').map((p) => p.progress)).toEqual([1, 2, 3, 4, 5]);
  const call = kit.start('wait', {}, { id: 'w-1' });
  await new Promise((r) => setTimeout(r, 100));
  await call.cancel('done waiting');
  await kit.ping();
  await new Promise((r) => setTimeout(r, 100));
  expect(kit.wire.responseTo('w-1')).toBeUndefined();
}, 30_000);
