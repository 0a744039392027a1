/**
 * Graceful shutdown (issue 16, fault 10): new sessions and calls are refused with HTTP 503 and a
 * JSON-RPC error (`data.code` SHUTTING_DOWN) instead of a connection reset; running calls get the
 * grace period; the ones still running then get a JSON-RPC error body, never an empty 499.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMcpHttp, type McpHttp } from '../src/index.js';
import { ended, started, v1Server, v2Server } from './fixtures/app.js';
import { META26, call, init, modernHeaders, post, rawSession, read, until, type Reading } from './helpers.js';

let front: McpHttp | undefined;
beforeEach(() => {
  ended.length = 0;
  started.length = 0;
});
afterEach(async () => {
  await front?.close();
  front = undefined;
});

const modernCall = (url: URL, id: number, name: string, args: Record<string, unknown>) =>
  post(url, call(id, name, args, META26), modernHeaders(name));

/** Poll until a new call is refused with 503 (the shutdown has begun), checking the refusal. */
async function refusedNow(url: URL, h: Record<string, string>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const r = await modernCall(url, 90_000 + i, 'echo', {}).catch(() => undefined);
    if (r?.status === 503) {
      expect(await r.json()).toMatchObject({
        id: 90_000 + i,
        error: { code: -32603, data: { code: 'SHUTTING_DOWN' } },
      });
      break;
    }
    await r?.text();
    await new Promise((z) => setTimeout(z, 20));
  }
  const legacy = await post(url, call('late', 'echo'), h);
  expect(legacy.status).toBe(503);
  expect(await legacy.json()).toMatchObject({ id: 'late', error: { data: { code: 'SHUTTING_DOWN' } } });
  const session = await post(url, init(77));
  expect(session.status).toBe(503);
  expect(await session.json()).toMatchObject({ id: 77, error: { data: { code: 'SHUTTING_DOWN' } } });
}

describe('shutdown(graceMs), in process (both eras)', () => {
  it('short calls finish, long ones get a SHUTTING_DOWN error and abort with kind shutdown, new work is refused with 503', async () => {
    front = createMcpHttp({ legacy: () => v1Server(), modern: () => v2Server() });
    const { url } = await front.listen(0);
    const h = await rawSession(url);
    const legacyShort = read(await post(url, call('ls', 'slow', { ms: 1_000 }), h));
    const legacyLong = read(await post(url, call('ll', 'slow', { ms: 60_000 }), h));
    const modernShort = modernCall(url, 1, 'slow', { ms: 1_000 }).then(read);
    const modernLong = modernCall(url, 2, 'slow', { ms: 60_000 }).then(read);
    await until(() => started.length === 4, 20_000, 'the 4 calls to start');
    const done = front.shutdown(2_000);
    await refusedNow(url, h);
    const result = await done;
    expect(result).toMatchObject({ aborted: 2, sessions: 1 });
    expect((await legacyShort.response('ls')).result.content[0].text).toBe('slept 1000');
    expect((await (await modernShort).response(1)).result.content[0].text).toBe('slept 1000');
    expect((await legacyLong.response('ll')).error).toMatchObject({
      code: -32603,
      data: { code: 'SHUTTING_DOWN', graceMs: 2_000 },
    });
    const ml = await modernLong;
    expect((await ml.response(2)).error).toMatchObject({ code: -32603, data: { code: 'SHUTTING_DOWN' } });
    await until(() => ended.length === 4);
    expect(ended.filter((e) => e.how === 'finished')).toHaveLength(2);
    expect(ended.filter((e) => e.how === 'shutdown')).toHaveLength(2);
  });
});

describe('SIGTERM under 60 in-flight calls (a real child process)', () => {
  it('short calls finish inside the grace period, long ones get an error response, new calls get SHUTTING_DOWN', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/server.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, '3000'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const url = await new Promise<URL>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (c) => {
          out += c;
          const m = /listening (\S+)/.exec(out);
          if (m) resolve(new URL(m[1]!));
        });
        child.once('exit', () => reject(new Error(`server exited: ${stderr}`)));
      });
      const sessions = await Promise.all([rawSession(url), rawSession(url), rawSession(url)]);
      const legacy: Array<{ id: string; long: boolean; r: Reading }> = [];
      const modern: Array<{ id: number; long: boolean; r: Promise<Reading> }> = [];
      for (let i = 0; i < 30; i++) {
        const long = i % 3 === 0;
        const id = `c${i}`;
        // Short calls run until 1 s after SIGTERM (however long starting 60 calls takes on a loaded
        // machine), so each one is running when the grace period starts and finishes inside it.
        legacy.push({
          id,
          long,
          r: read(
            await post(
              url,
              long ? call(id, 'slow', { ms: 60_000 }) : call(id, 'afterShutdown', { ms: 1_000 }),
              sessions[i % 3]!,
            ),
          ),
        });
        modern.push({
          id: i,
          long,
          r: (long
            ? modernCall(url, i, 'slow', { ms: 60_000 })
            : modernCall(url, i, 'afterShutdown', { ms: 1_000 })
          ).then(read),
        });
      }
      // Every call is running (the child counts the calls its tools started).
      for (let i = 0; ; i++) {
        const r = read(await modernCall(url, 80_000 + i, 'started', {}));
        if ((await r.response(80_000 + i)).result.content[0].text === '60') break;
        if (i > 500) throw new Error('the 60 calls did not start');
        await new Promise((z) => setTimeout(z, 20));
      }
      const t0 = Date.now();
      child.kill('SIGTERM');
      await refusedNow(url, sessions[0]!);
      for (const c of [...legacy, ...modern]) {
        const reading = await c.r;
        const m = await reading.response(c.id, 15_000);
        if (c.long) expect(m.error, `call ${c.id}`).toMatchObject({ code: -32603, data: { code: 'SHUTTING_DOWN' } });
        else expect(m.result?.content?.[0]?.text, `call ${c.id}`).toBe('slept 1000');
      }
      expect(await exited).toBe(0);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(2_500); // the grace period was given
      expect(stderr).toMatch(/shutdown \{"finished":40,"aborted":20,"sessions":3\}/);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
