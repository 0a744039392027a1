// Issue 16, fault 7 on the wire: a real child process serving stdio, a lock key derived from a
// deeply nested argument. Lines are written raw (the argument is built as text).
import { spawnStdio, type RawStdio } from '@mcp-tether/testing';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/stdio-mutex-server.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));
let raw: RawStdio | undefined;
afterEach(() => raw?.kill());

it.each(['v1', 'v2'])(
  'SDK %s: a 200 000-level nested argument reaching the lock key gets -32602 with its id; the next call is served',
  async (line) => {
    raw = await spawnStdio(process.execPath, ['--import', 'tsx', fixture, line], { cwd });
    const call = (id: string, key: string) =>
      `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"write","arguments":{"key":${key}}}}\n`;
    await raw.write(call('deep', `${'['.repeat(200_000)}${']'.repeat(200_000)}`));
    const deep = await raw.response('deep', 15_000);
    expect(deep.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/cannot derive its mutex lock key/),
    });
    expect(deep.error.message).not.toMatch(/Maximum call stack/);
    await raw.write(call('flat', '"a"'));
    expect((await raw.response('flat', 15_000)).result.content).toEqual([{ type: 'text', text: 'written' }]);
  },
  30_000,
);
