import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pause, spawnStdio } from '@mcp-tether/testing';
import { sdkTargets } from '@mcp-tether/testing/matrix';
import { afterEach, describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/stdio-server.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));

let child: ChildProcessWithoutNullStreams | undefined;
afterEach(() => {
  child?.kill();
  child = undefined;
});

/** A raw stdio peer: we write bytes exactly as we choose and read newline-delimited JSON-RPC. */
function rawStdio(sdk: 'v1' | 'v2') {
  const env = { ...process.env, TETHER_FIXTURE_SDK: sdk };
  const proc = spawn(process.execPath, ['--import', 'tsx', fixture], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  child = proc;
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const received: Array<Record<string, any>> = [];
  const waiters: Array<{ id: unknown; resolve: (m: Record<string, any>) => void }> = [];
  createInterface({ input: proc.stdout }).on('line', (line) => {
    const m = JSON.parse(line) as Record<string, any>;
    received.push(m);
    for (const w of waiters.filter((x) => x.id === m.id && m.method === undefined)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  });
  const response = (id: unknown, timeoutMs = 45_000) =>
    new Promise<Record<string, any>>((resolve, reject) => {
      const found = received.find((m) => m.id === id && m.method === undefined);
      if (found) return resolve(found);
      const timer = setTimeout(
        () => reject(new Error(`no response to ${String(id)} within ${timeoutMs} ms; stderr: ${stderr}`)),
        timeoutMs,
      );
      waiters.push({
        id,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  const line = (m: unknown) => `${JSON.stringify(m)}\n`;
  /** One `write()` call: the bytes reach the server's stdin as one chunk. */
  const write = (...messages: unknown[]) =>
    new Promise<void>((r) => proc.stdin.write(messages.map(line).join(''), () => r()));
  return { received, response, write };
}

const call = (id: number, name: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {} },
});
const cancelFor = (id: number) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId: id, reason: 'changed my mind' },
});

// Stdio is a 2025-era session on both SDK lines (the v2 server's stdio transport included), so this
// runs on the legacy targets; 2026-07-28 over HTTP has no notifications/cancelled (the matrix in
// cancel.test.ts covers its stream-close cancel). Raw bytes, not the test kit: the point is one chunk.
for (const sdk of sdkTargets({ eras: ['legacy'] })) {
  describe(`stdio [${sdk.name}]`, () => {
    it('tools/call and notifications/cancelled in ONE stdio chunk: the handler never runs, nothing is answered; the control call runs', async () => {
      const io = rawStdio(sdk.sdk);
      await io.write({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      });
      const init = (await io.response(1)).result;
      expect(init.protocolVersion).toBe('2025-11-25');
      expect(init.serverInfo.name).toBe(`cancel-stdio-fixture-${sdk.sdk}`); // the SDK line asked for
      await io.write({ jsonrpc: '2.0', method: 'notifications/initialized' });

      await io.write(call(2, 'count'), cancelFor(2)); // one chunk
      await pause(300);
      const stats = JSON.parse(await ask(io, 3));
      expect(stats).toEqual({ ran: 0, cleaned: 0 });
      expect(io.received.filter((m) => m.id === 2)).toEqual([]);

      // control: the same call without the cancel runs (so the check above can fail)
      await io.write(call(4, 'count'));
      expect((await io.response(4)).result.content[0].text).toBe('counted');
      expect(JSON.parse(await ask(io, 5))).toEqual({ ran: 1, cleaned: 1 });

      // and a cancel in the same chunk as a call for id 0 too
      await io.write(call(0, 'count'), cancelFor(0));
      await pause(300);
      expect(JSON.parse(await ask(io, 6))).toEqual({ ran: 1, cleaned: 1 });
      expect(io.received.filter((m) => m.id === 0)).toEqual([]);
    }, 30_000);

    // Issue 16, fault 3: the client goes away (stdin ends) while a call runs.
    it('stdin ends during a call: the call aborts with disconnect, its cleanup runs, nothing is answered, the process exits by itself', async () => {
      const raw = await spawnStdio(process.execPath, ['--import', 'tsx', fixture], {
        cwd,
        env: { TETHER_FIXTURE_SDK: sdk.sdk },
      });
      try {
        await raw.send(call(7, 'long'));
        await pause(300);
        raw.child.stdin.end();
        expect(await raw.exited(15_000)).toBe(0); // SDK 1.x alone: the call slept on for a minute
        expect(raw.stderr()).toMatch(/long cleanup: disconnect/);
        expect(raw.messages.filter((m) => m.id === 7)).toEqual([]);
      } finally {
        raw.kill();
      }
    }, 30_000);
  });
}

async function ask(io: ReturnType<typeof rawStdio>, id: number): Promise<string> {
  await io.write(call(id, 'ran'));
  return (await io.response(id)).result.content[0].text as string;
}
