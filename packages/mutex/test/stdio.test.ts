// Issue 16, fault 7 on the wire: a real child process serving stdio, a lock key derived from a
// deeply nested argument. Lines are written and read raw (the argument is built as text).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/stdio-mutex-server.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));

it.each(['v1', 'v2'])('SDK %s: a 200 000-level nested argument reaching the lock key gets -32602 with its id; the next call is served', async (line) => {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, line], { cwd, stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const responses = new Map<unknown, any>();
    let rest = '';
    let wake = () => {};
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      rest += chunk;
      for (let nl = rest.indexOf('\n'); nl !== -1; nl = rest.indexOf('\n')) {
        const m = JSON.parse(rest.slice(0, nl));
        rest = rest.slice(nl + 1);
        if ('id' in m) responses.set(m.id, m);
      }
      wake();
    });
    const response = (id: string) =>
      new Promise<any>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no response to ${id}`)), 15_000);
        const check = () => {
          if (!responses.has(id)) return;
          clearTimeout(timer);
          resolve(responses.get(id));
        };
        wake = check;
        check();
      });
    const call = (id: string, key: string) =>
      `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"write","arguments":{"key":${key}}}}\n`;
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } })}\n`);
    expect((await response('init')).result).toBeDefined();
    child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    child.stdin.write(call('deep', `${'['.repeat(200_000)}${']'.repeat(200_000)}`));
    const deep = await response('deep');
    expect(deep.error).toMatchObject({ code: -32602, message: expect.stringMatching(/cannot derive its mutex lock key/) });
    expect(deep.error.message).not.toMatch(/Maximum call stack/);
    child.stdin.write(call('flat', '"a"'));
    expect((await response('flat')).result.content).toEqual([{ type: 'text', text: 'written' }]);
  } finally {
    child.kill();
  }
}, 30_000);
