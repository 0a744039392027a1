/**
 * callTool on the wire, on every SDK line and era (core's matrix: v1, v2 2025-era, v2 2026-07-28):
 * our progress token, progress in order, the silence watchdog, the timeouts, the total cap and the
 * caller's signal each abort the call and the server sees the cancel; logs go to onLog only.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { cancel } from '@mcp-tether/cancel';
import { handler, type CallContext } from '@mcp-tether/core';
import { firstText, until } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer, type MatrixClient, type SdkTarget } from '@mcp-tether/testing/matrix';
import { heartbeat } from '@mcp-tether/heartbeat';
import { logChannel } from '@mcp-tether/log-channel';
import '@mcp-tether/log-channel';
import { progress, progressMiddleware } from '@mcp-tether/progress';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { isCallAborted, tetherClient, type CallAbortedError, type LogEntry } from '../src/index.js';

const text = (s: string) => ({ content: [{ type: 'text' as const, text: s }] });
const sleep = (ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal });

/** What the server saw: each call's abort reason (message and kind), by tool. */
interface Seen {
  aborts: Array<{ tool: string; kind: string; message: string }>;
  errors: unknown[];
}

function factory(sdk: SdkTarget, seen: Seen, hb?: number) {
  const stack = [
    cancel(),
    logChannel(),
    ...(hb ? [heartbeat({ silenceMs: hb })] : []),
    progressMiddleware({ minIntervalMs: 0 }),
  ];
  return () => {
    const { server } = tetheredServer(sdk, stack, seen.errors);
    const watch = (ctx: CallContext) =>
      ctx.onAbort((reason) =>
        seen.aborts.push({
          tool: ctx.name,
          kind: (reason as { kind: string }).kind,
          message: (reason as Error).message,
        }),
      );
    server.registerTool(
      'steps',
      { inputSchema: { n: z.number(), ms: z.number() } },
      handler(async function* (args: { n: number; ms: number }, ctx) {
        watch(ctx);
        for (let i = 1; i <= args.n; i++) {
          await sleep(args.ms, ctx.signal);
          yield progress({ progress: i, total: args.n, message: `step ${i}` });
        }
        return text(`did ${args.n}`);
      }),
    );
    server.registerTool(
      'quiet',
      { inputSchema: { ms: z.number() } },
      handler(async (args: { ms: number }, ctx) => {
        watch(ctx);
        await sleep(args.ms, ctx.signal);
        return text('done');
      }),
    );
    server.registerTool(
      'chatty',
      { inputSchema: {} },
      handler(async (_args: object, ctx) => {
        ctx.log.debug('a debug line');
        ctx.log.info('an info line');
        ctx.log.child('db').warning({ table: 't', rows: 3 });
        return text('result only');
      }),
    );
    return server;
  };
}

/** The client→server cancels on the wire (legacy) or the closed response stream (modern). */
const cancelsOnWire = (kit: MatrixClient) =>
  kit.wire.fromClient().filter((m) => m.message.method === 'notifications/cancelled');

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describeEachSdk('callTool', (sdk) => {
  it('sends a progress token of its own and delivers every progress notification in order, then the result', async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen));
    const tc = tetherClient(kit.client);
    const got: number[] = [];
    const r = await tc.callTool('steps', { n: 5, ms: 5 }, { onProgress: (p) => got.push(p.progress) });
    expect(firstText(r)).toBe('did 5');
    expect(got).toEqual([1, 2, 3, 4, 5]);
    const call = kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!;
    const token = call.message.params._meta.progressToken;
    expect(typeof token).toBe('string');
    expect(token).toMatch(/^tether-/);
    expect(kit.wire.progress(token).map((p) => p.progress)).toEqual([1, 2, 3, 4, 5]);
    expect(tc.inFlight).toBe(0);
    expect(seen.errors).toEqual([]);
  });

  it('two calls at once get two tokens, and each sees only its own progress', async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen));
    const tc = tetherClient(kit.client);
    const a: number[] = [];
    const b: number[] = [];
    await Promise.all([
      tc.callTool('steps', { n: 3, ms: 7 }, { onProgress: (p) => a.push(p.total!) }),
      tc.callTool('steps', { n: 4, ms: 5 }, { onProgress: (p) => b.push(p.total!) }),
    ]);
    expect(a).toEqual([3, 3, 3]);
    expect(b).toEqual([4, 4, 4, 4]);
  });

  it('the silence watchdog aborts a silent call with a clear error, and the server sees the cancel', async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen));
    const tc = tetherClient(kit.client);
    const t0 = Date.now();
    const err = (await tc.callTool('quiet', { ms: 10_000 }, { silenceMs: 150 }).catch((e) => e)) as CallAbortedError;
    expect(isCallAborted(err)).toBe(true);
    expect(err.kind).toBe('silence');
    expect(err.message).toMatch(/^quiet: no progress and no result for \d+ ms \(silence watchdog, silenceMs 150\)/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    await until(() => seen.aborts.length === 1, 5_000, 'the server-side abort');
    if (sdk.era === 'legacy') {
      expect(seen.aborts[0]).toMatchObject({ tool: 'quiet', kind: 'cancelled' });
      expect(seen.aborts[0]!.message).toContain('silence watchdog');
      const cancels = cancelsOnWire(kit);
      expect(cancels).toHaveLength(1);
      const callId = kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!.message.id;
      expect(cancels[0]!.message.params.requestId).toBe(callId);
    } else {
      // 2026-07-28 over HTTP: closing the response stream is the cancel (no notification exists there).
      expect(seen.aborts[0]).toMatchObject({ tool: 'quiet', kind: 'disconnect' });
    }
  });

  it('heartbeats keep a silent call alive past silenceMs and timeoutMs (the timeout resets on progress)', async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen, 40));
    const tc = tetherClient(kit.client);
    const beats: string[] = [];
    const r = await tc.callTool(
      'quiet',
      { ms: 900 },
      { silenceMs: 400, timeoutMs: 450, onProgress: (p) => beats.push(p.message ?? '') },
    );
    expect(firstText(r)).toBe('done');
    expect(beats.length).toBeGreaterThan(3);
    expect(seen.aborts).toEqual([]);
  });

  it('resetTimeoutOnProgress: false times out although progress flows, and cancels', async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen));
    const tc = tetherClient(kit.client);
    const got: number[] = [];
    const err = (await tc
      .callTool(
        'steps',
        { n: 100, ms: 20 },
        { timeoutMs: 400, resetTimeoutOnProgress: false, onProgress: (p) => got.push(p.progress) },
      )
      .catch((e) => e)) as CallAbortedError;
    expect(err.kind).toBe('timeout');
    expect(err.message).toBe('steps: timed out after 400 ms; cancelled');
    expect(got.length).toBeGreaterThan(0); // progress flowed, and did not reset this timeout
    expect(err.lastProgress?.progress).toBe(got.at(-1));
    await until(() => seen.aborts.length === 1, 5_000, 'the server-side abort');
  });

  it('the total cap fires while progress flows, and (unlike the SDK maxTotalTimeout) sends the cancel', async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen));
    const tc = tetherClient(kit.client);
    const err = (await tc
      .callTool('steps', { n: 100, ms: 20 }, { maxTotalMs: 250 })
      .catch((e) => e)) as CallAbortedError;
    expect(err.kind).toBe('total');
    expect(err.message).toBe('steps: exceeded the total cap of 250 ms; cancelled');
    await until(() => seen.aborts.length === 1, 5_000, 'the server-side abort');
    if (sdk.era === 'legacy') expect(cancelsOnWire(kit)).toHaveLength(1);
  });

  it.skipIf(sdk.era === 'modern')(
    'control: the bare SDK maxTotalTimeout rejects but sends no cancel, and the server keeps working',
    async () => {
      const seen: Seen = { aborts: [], errors: [] };
      kit = await sdk.connect(factory(sdk, seen));
      const opts = { onprogress: () => {}, resetTimeoutOnProgress: true, maxTotalTimeout: 250, timeout: 60_000 };
      const params = { name: 'steps', arguments: { n: 30, ms: 20 } };
      const err = await (sdk.sdk === 'v1'
        ? kit.client.callTool(params, undefined, opts)
        : kit.client.callTool(params, opts)
      ).catch((e: Error) => e);
      expect(String(err.message)).toMatch(/Maximum total timeout exceeded/);
      await new Promise((r) => setTimeout(r, 150));
      expect(cancelsOnWire(kit)).toHaveLength(0);
      expect(seen.aborts).toEqual([]); // the server was never told
    },
  );

  it("the caller's signal cancels with its reason; a signal aborted before the call sends nothing", async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen));
    const tc = tetherClient(kit.client);
    const ac = new AbortController();
    const pending = tc.callTool('quiet', { ms: 10_000 }, { signal: ac.signal });
    await until(
      () => seen.aborts.length === 0 && kit!.wire.fromClient().some((m) => m.message.method === 'tools/call'),
      5_000,
      'the call',
    );
    await new Promise((r) => setTimeout(r, 30));
    ac.abort('user pressed stop');
    const err = (await pending.catch((e) => e)) as CallAbortedError;
    expect(err.kind).toBe('cancelled');
    expect(err.message).toBe('quiet: cancelled (user pressed stop)');
    await until(() => seen.aborts.length === 1, 5_000, 'the server-side abort');
    if (sdk.era === 'legacy') expect(seen.aborts[0]!.message).toContain('user pressed stop');

    const calls = kit.wire.fromClient().filter((m) => m.message.method === 'tools/call').length;
    const late = (await tc
      .callTool('quiet', { ms: 1 }, { signal: AbortSignal.abort('no') })
      .catch((e) => e)) as CallAbortedError;
    expect(late.kind).toBe('cancelled');
    expect(kit.wire.fromClient().filter((m) => m.message.method === 'tools/call')).toHaveLength(calls);
  });

  it('a tool that fails returns its isError result; a JSON-RPC error is rethrown as the SDK gave it', async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen));
    const tc = tetherClient(kit.client);
    const r = await tc.callTool('no-such-tool', {}).catch((e) => ({ thrown: e }));
    // Either form is the SDK's own answer for an unknown tool; what matters is that it is not a CallAbortedError.
    if ('thrown' in r) expect(isCallAborted(r.thrown)).toBe(false);
    else expect(r.isError).toBe(true);
    expect(tc.inFlight).toBe(0);
  });

  it.skipIf(sdk.era === 'modern')('logs go to onLog by level (client-side filter), never into the result', async () => {
    const seen: Seen = { aborts: [], errors: [] };
    kit = await sdk.connect(factory(sdk, seen));
    const logs: LogEntry[] = [];
    const tc = tetherClient(kit.client, { onLog: (e) => logs.push(e), logLevel: 'debug' });
    await tc.setLogLevel('debug');
    const r = await tc.callTool('chatty', {});
    expect(r.content).toEqual([{ type: 'text', text: 'result only' }]);
    await until(() => logs.length === 3, 2_000, 'three log lines');
    expect(logs).toEqual([
      { level: 'debug', data: 'a debug line' },
      { level: 'info', data: 'an info line' },
      { level: 'warning', logger: 'db', data: { table: 't', rows: 3 } },
    ]);
    await tc.setLogLevel('warning');
    logs.length = 0;
    await tc.callTool('chatty', {});
    await until(() => logs.length === 1, 2_000, 'one log line');
    await new Promise((r) => setTimeout(r, 20));
    expect(logs.map((l) => l.level)).toEqual(['warning']);
    await expect(tc.setLogLevel('loud' as never)).rejects.toThrow(/unknown level "loud"/);
  });

  it.skipIf(sdk.era === 'modern')(
    'handlers set with the SDK after wrapping run behind ours, not instead of ours',
    async () => {
      const seen: Seen = { aborts: [], errors: [] };
      kit = await sdk.connect(factory(sdk, seen));
      const logs: LogEntry[] = [];
      const tc = tetherClient(kit.client, { onLog: (e) => logs.push(e), logLevel: 'debug' });
      const theirs: string[] = [];
      if (sdk.sdk === 'v1') {
        const { LoggingMessageNotificationSchema, ProgressNotificationSchema } = await import(
          '@modelcontextprotocol/sdk/types.js'
        );
        kit.client.setNotificationHandler(
          LoggingMessageNotificationSchema,
          (n: any) => void theirs.push(`log ${n.params.level}`),
        );
        kit.client.setNotificationHandler(
          ProgressNotificationSchema,
          (n: any) => void theirs.push(`progress ${n.params.progressToken}`),
        );
      } else {
        kit.client.setNotificationHandler(
          'notifications/message',
          (n: any) => void theirs.push(`log ${n.params.level}`),
        );
        kit.client.setNotificationHandler(
          'notifications/progress',
          (n: any) => void theirs.push(`progress ${n.params.progressToken}`),
        );
      }
      await tc.setLogLevel('debug');
      const got: number[] = [];
      await tc.callTool('steps', { n: 2, ms: 5 }, { onProgress: (p) => got.push(p.progress) });
      await tc.callTool('chatty', {});
      await until(() => logs.length === 3 && theirs.length === 3, 2_000, 'logs on both sides');
      expect(got).toEqual([1, 2]); // ours still dispatches our tokens
      expect(theirs).toEqual(['log debug', 'log info', 'log warning']); // theirs gets what is not ours: the logs, no progress of our calls
    },
  );

  it.skipIf(sdk.era === 'legacy')(
    '2026-07-28: the log level travels in _meta of each call, and logs reach onLog only',
    async () => {
      const seen: Seen = { aborts: [], errors: [] };
      kit = await sdk.connect(factory(sdk, seen));
      const logs: LogEntry[] = [];
      const tc = tetherClient(kit.client, { onLog: (e) => logs.push(e), logLevel: 'info' });
      const r = await tc.callTool('chatty', {});
      expect(r.content).toEqual([{ type: 'text', text: 'result only' }]);
      const call = kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!;
      expect(call.message.params._meta['io.modelcontextprotocol/logLevel']).toBe('info');
      await until(() => logs.length === 2, 2_000, 'two log lines');
      expect(logs.map((l) => l.level)).toEqual(['info', 'warning']);
    },
  );
});
