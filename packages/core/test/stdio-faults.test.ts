import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnStdio, type RawStdio } from '@mcp-tether/testing';

const fixture = fileURLToPath(new URL('./fixtures/stdio-faults-server.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));
/** The fixture in a child process: `node --import tsx stdio-faults-server.ts <mode> [maxLine]`. */
const spawnRaw = (args: string[]) => spawnStdio(process.execPath, ['--import', 'tsx', fixture, ...args], { cwd });
let raw: RawStdio | undefined;
afterEach(() => {
  raw?.kill();
  raw = undefined;
});

/** `{ value: [[[...]]] }` nested `depth` levels, built as text (no recursion). */
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe.each(['v1', 'v2', 'v2-serve'] as const)('stdio faults on a real child process, SDK %s', (line) => {
  it('fault 9: invalid lines are answered per JSON-RPC (-32700 id null; -32600 with the id when valid) and serving goes on', async () => {
    raw = await spawnRaw([line]);
    await raw.send('{not json');
    expect(await raw.response(null)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    let from = raw.messages.length;
    await raw.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: 'x' });
    expect((await raw.response(7, 5_000, from)).error).toMatchObject({
      code: -32600,
      message: expect.stringMatching(/params must be an object/),
    });
    from = raw.messages.length;
    await raw.send({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' });
    expect((await raw.response(null, 5_000, from)).error).toMatchObject({
      code: -32600,
      message: expect.stringMatching(/id must be/),
    });
    from = raw.messages.length;
    await raw.send({ jsonrpc: '1.0', id: 'old', method: 'ping' });
    expect((await raw.response('old', 5_000, from)).error.code).toBe(-32600);
    from = raw.messages.length;
    await raw.send('[{"jsonrpc":"2.0","id":1,"method":"ping"}]');
    expect((await raw.response(null, 5_000, from)).error).toMatchObject({
      code: -32600,
      message: expect.stringMatching(/batch/),
    });
    await raw.send('   '); // a blank line: no message, nothing to answer
    expect(await raw.request('after', 'ping')).toMatchObject({ id: 'after', result: {} });
    expect(raw.garbage).toEqual([]);
  });

  it('fault 9: a line over 10 MiB is refused with a clear error; the process keeps serving', async () => {
    raw = await spawnRaw([line]);
    const big = `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"depth","arguments":{"value":"${'x'.repeat(10 * 1024 * 1024 + 10)}"}}}\n`;
    const from = raw.messages.length;
    await raw.write(big);
    const refusal = await raw.response(null, 10_000, from);
    expect(refusal.error).toMatchObject({ code: -32600, message: expect.stringMatching(/line limit/) });
    expect(await raw.request('after-big', 'tools/call', { name: 'depth', arguments: { value: [[1]] } })).toMatchObject({
      result: { content: [{ text: 'depth 2' }] },
    });
    expect(raw.messages.some((m) => m.id === 'big')).toBe(false);
  });

  it('fault 8: malformed tools/call params get -32602 with a short message (no zod dump)', async () => {
    raw = await spawnRaw([line]);
    for (const [id, params] of [
      ['args-string', { name: 'depth', arguments: 'nope' }],
      ['args-array', { name: 'depth', arguments: [1, 2] }],
      ['name-number', { name: 42, arguments: {} }],
      ['name-missing', { arguments: {} }],
    ] as const) {
      const r = await raw.request(id, 'tools/call', params);
      expect(r.error, id).toMatchObject({ code: -32602 });
      expect(r.error.message.length, id).toBeLessThan(200);
      expect(r.error.message, id).not.toMatch(/"code":|invalid_type/);
    }
    expect(await raw.request('ok', 'tools/call', { name: 'depth', arguments: { value: 1 } })).toMatchObject({
      result: { content: [{ text: 'depth 0' }] },
    });
  });

  it('fault 7: a 6 000-level nested argument is served (nothing re-serializes it)', async () => {
    raw = await spawnRaw([line]);
    const from = raw.messages.length;
    await raw.write(
      `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"depth","arguments":{"value":${nested(6_000)}}}}\n`,
    );
    expect(await raw.response('deep', 10_000, from)).toMatchObject({ result: { content: [{ text: 'depth 6000' }] } });
  });

  it('fault 3: when stdin ends, the running call is aborted (disconnect), nothing more is written, the process exits', async () => {
    raw = await spawnRaw([line]);
    await raw.send({
      jsonrpc: '2.0',
      id: 'c',
      method: 'tools/call',
      params: { name: 'chatty', arguments: {}, _meta: { progressToken: 'p' } },
    });
    const progress = () => raw!.messages.filter((m) => m.method === 'notifications/progress').length;
    const start = Date.now();
    while (progress() < 5 && Date.now() - start < 10_000) await new Promise((r) => setTimeout(r, 10));
    expect(progress()).toBeGreaterThanOrEqual(5);
    raw.child.stdin.end(); // the client went away
    await raw.exited(10_000).catch(() => undefined); // the handler ignores its signal: its own timers keep the process up to 3 s
    // What was on stdout when the abort was reported: nothing may follow it.
    const abortedAt = raw.stderr().indexOf('chatty aborted: disconnect');
    expect(abortedAt).toBeGreaterThan(-1);
    expect(raw.stderr()).toMatch(/chatty finished/); // the handler did run its 300 reports...
    expect(progress()).toBeLessThan(150); // ...but those after the client left were never written
    expect(raw.messages.some((m) => m.id === 'c')).toBe(false); // nor was a response
    expect(await raw.exited(10_000)).toBe(0);
    expect(raw.garbage).toEqual([]);
  });
});
