/**
 * log-channel on the wire, on every SDK line and era (core's test matrix): a real client and a
 * real server of the same SDK line —
 *
 * - `v1`: SDK 1.x, 2025-11-25 session in memory;
 * - `v2-legacy`: SDK 2.x, 2025-11-25 session in memory;
 * - `v2-modern`: SDK 2.x `createMcpHandler` in process, client pinned to 2026-07-28 (one server per
 *   request; the level comes with each request in `_meta`).
 *
 * Where the eras differ the test says so; era-only behaviour runs only where it exists. Stateful
 * Streamable HTTP sessions (a 2025-era transport) are tested on v1 over 127.0.0.1 at the end.
 */
import { handler, tether } from '@mcp-tether/core';
import { connectHttp, serveHttp, type HttpHarness, type TestClient } from '@mcp-tether/testing';
import { describeEachSdk, type MatrixClient, type MatrixServer, type SdkTarget } from '@mcp-tether/testing/matrix';
import { Client as ClientV2, InMemoryTransport as InMemoryTransportV2 } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CHANNEL_LOGGER,
  LOG_LEVEL_META_KEY,
  LOG_LEVELS,
  callLogger,
  logChannel,
  type LogChannel,
  type LogEntry,
  type LogLevel,
} from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FOUR: LogLevel[] = ['debug', 'info', 'warning', 'error'];

type Kit = MatrixClient | TestClient;
type Params = { level: LogLevel; logger?: string; data: any };
type CallOpts = { meta?: Record<string, unknown> };

const logsOf = (kit: Kit): Params[] =>
  kit.wire.notifications('notifications/message').map((m) => m.message.params as Params);
const callIdOf = (kit: Kit, tag?: string): string | number =>
  kit.wire
    .fromClient()
    .find((m) => m.message.method === 'tools/call' && (tag === undefined || m.message.params?.arguments?.tag === tag))!
    .message.id;
/** Wait until the response to the (only or tagged) tools/call was recorded: on one stream, every earlier message was recorded too. */
const responseRecorded = (kit: Kit, tag?: string) =>
  kit.wire.waitFor(
    (m) => m.direction === 'server->client' && m.message.method === undefined && m.message.id === callIdOf(kit, tag),
    5_000,
  );
/** Send a raw JSON-RPC request and return its response message (result or error) from the wire. */
async function rawRequest(
  kit: MatrixClient,
  id: string,
  method: string,
  params: Record<string, unknown>,
): Promise<Record<string, any>> {
  await kit.sendRaw({ jsonrpc: '2.0', id, method, params });
  return (
    await kit.wire.waitFor(
      (m) => m.direction === 'server->client' && m.message.id === id && m.message.method === undefined,
      5_000,
    )
  ).message;
}

/**
 * Ask for `level` the era's way: `logging/setLevel` for the session (2025), or the call options
 * that put it in each request's `_meta` (2026-07-28, where setLevel does not exist).
 */
async function askLevel(sdk: SdkTarget, kit: MatrixClient, level: LogLevel): Promise<CallOpts> {
  if (sdk.era === 'modern') return { meta: { [LOG_LEVEL_META_KEY]: level } };
  expect(await kit.client.setLoggingLevel(level)).toEqual({});
  return {};
}

interface Hooks {
  gate?: Promise<void>;
  onFlood?: (ms: number) => void;
  ran?: { n: number };
  /** tether()'s asyncContext option (callLogger() needs it). */
  asyncContext?: boolean;
}

/** A factory of servers with a tool that logs at each of `levels` (and one that floods). On v2-modern it runs per request. */
function makeServer(
  sdk: SdkTarget,
  logs: LogChannel | undefined,
  hooks: Hooks = {},
  extra?: (server: MatrixServer) => void,
): () => MatrixServer {
  return () => {
    const server = sdk.createServer({ name: 'log-test', version: '1.0.0' });
    if (logs) tether(server as never, [logs], { asyncContext: hooks.asyncContext });
    server.registerTool(
      'four',
      { inputSchema: { tag: z.string(), levels: z.array(z.string()).optional() } },
      handler(async ({ tag, levels }: { tag: string; levels?: string[] }, ctx) => {
        if (hooks.ran) hooks.ran.n++;
        for (const level of (levels as LogLevel[] | undefined) ?? FOUR)
          ctx.log.log(level, { tag, level, secret: 'hunter2' });
        return { content: [{ type: 'text' as const, text: `done ${tag}` }] };
      }),
    );
    server.registerTool(
      'flood',
      { inputSchema: { n: z.number() } },
      handler(async ({ n }: { n: number }, ctx) => {
        const t0 = Date.now();
        for (let i = 0; i < n; i++) ctx.log.info({ i });
        hooks.onFlood?.(Date.now() - t0);
        await hooks.gate;
        return { content: [{ type: 'text' as const, text: `flooded ${n}` }] };
      }),
    );
    extra?.(server);
    return server;
  };
}

const kits: Kit[] = [];
let http: HttpHarness | undefined;
afterEach(async () => {
  for (const k of kits.splice(0)) await k.close().catch(() => {});
  await http?.close();
  http = undefined;
});
const track = <T extends Kit>(k: T): T => {
  kits.push(k);
  return k;
};

describeEachSdk('levels', (sdk) => {
  it("the client gets exactly the levels it asked for, on the call's own stream before its response; the result holds no logs", async () => {
    const kit = track(await sdk.connect(makeServer(sdk, logChannel())));
    const opts = await askLevel(sdk, kit, 'warning');
    const r = await kit.callTool('four', { tag: 'a', levels: [...LOG_LEVELS] }, opts);
    await responseRecorded(kit);
    expect(r.content).toEqual([{ type: 'text', text: 'done a' }]);

    const id = callIdOf(kit);
    const msgs = kit.wire.notifications('notifications/message');
    expect(msgs.map((m) => m.message.params)).toEqual(
      ['warning', 'error', 'critical', 'alert', 'emergency'].map((level) => ({
        level,
        data: { tag: 'a', level, secret: 'hunter2' },
      })),
    );
    const response = kit.wire.responseTo(id)!;
    expect(msgs.every((m) => m.seq < response.seq)).toBe(true);
    // Logs never enter a tool result.
    expect(JSON.stringify(response.message)).not.toContain('hunter2');
    // 2026-07-28 over HTTP: every line rode this request's own response stream.
    if (sdk.era === 'modern') for (const m of msgs) expect(m.stream).toEqual({ kind: 'post', requestIds: [id] });
  });

  it('enabled() follows the client level when there is no sink; bad input gets clear errors', async () => {
    const seen: unknown[] = [];
    const kit = track(
      await sdk.connect(
        makeServer(sdk, logChannel(), {}, (server) => {
          server.registerTool(
            'probe',
            { inputSchema: {} },
            handler(async (_a: unknown, ctx) => {
              seen.push(ctx.log.enabled('debug'), ctx.log.enabled('info'));
              seen.push(catchMessage(() => ctx.log.log('verbose' as LogLevel, 'x')));
              seen.push(catchMessage(() => ctx.log.child('')));
              return { content: [] };
            }),
          );
        }),
      ),
    );
    // Legacy: the default level `info`. Modern: the level this request sent.
    await kit.callTool('probe', {}, sdk.era === 'modern' ? { meta: { [LOG_LEVEL_META_KEY]: 'info' } } : {});
    expect(seen.slice(0, 2)).toEqual([false, true]);
    expect(seen[2]).toMatch(/unknown log level "verbose"/);
    expect(seen[3]).toMatch(/non-empty string/);
    if (sdk.era === 'modern') {
      // No level on the request: nothing is enabled (no sink either).
      seen.length = 0;
      await kit.callTool('probe', {});
      expect(seen.slice(0, 2)).toEqual([false, false]);
    }
  });
});

describeEachSdk(
  '2026-07-28: the level comes with each request',
  (sdk) => {
    it('no _meta level: no notifications/message at all for the request (options.level does not apply); the sink still gets everything', async () => {
      const entries: LogEntry[] = [];
      const kit = track(
        await sdk.connect(makeServer(sdk, logChannel({ level: 'debug', sink: (e) => entries.push(e) }))),
      );
      const r = await kit.callTool('four', { tag: 'quiet', levels: [...LOG_LEVELS] });
      await responseRecorded(kit);
      expect(r.content).toEqual([{ type: 'text', text: 'done quiet' }]);
      expect(kit.wire.notifications('notifications/message')).toEqual([]);
      expect(kit.wire.transcript()).not.toContain('hunter2');
      expect(entries.map((e) => e.level)).toEqual([...LOG_LEVELS]);
      // The next request asks for `error`: only its lines, only at that level.
      await kit.callTool('four', { tag: 'loud', levels: [...LOG_LEVELS] }, { meta: { [LOG_LEVEL_META_KEY]: 'error' } });
      await responseRecorded(kit, 'loud');
      expect(logsOf(kit).map((p) => [p.level, p.data.tag])).toEqual([
        ['error', 'loud'],
        ['critical', 'loud'],
        ['alert', 'loud'],
        ['emergency', 'loud'],
      ]);
    });

    it('an unknown _meta level is -32602 on the wire and the handler does not run', async () => {
      const ran = { n: 0 };
      const kit = track(await sdk.connect(makeServer(sdk, logChannel(), { ran })));
      for (const [i, bad] of ['verbose', 'WARNING', 42, ''].entries()) {
        const call = kit.start('four', { tag: `bad-${i}` }, { id: `bad-${i}`, meta: { [LOG_LEVEL_META_KEY]: bad } });
        const response = await call.response();
        expect(response.error?.code).toBe(-32602);
        expect(response.error?.message).toMatch(/logLevel/);
      }
      expect(ran.n).toBe(0);
      expect(kit.wire.notifications('notifications/message')).toEqual([]);
      // The SDK client refuses the same way.
      await expect(
        kit.callTool('four', { tag: 'sdk' }, { meta: { [LOG_LEVEL_META_KEY]: 'verbose' } }),
      ).rejects.toMatchObject({ code: -32602 });
      expect(ran.n).toBe(0);
    });

    it('logging/setLevel is -32601 (removed in 2026-07-28) and changes nothing', async () => {
      const kit = track(await sdk.connect(makeServer(sdk, logChannel())));
      const response = await rawRequest(kit, 'set-1', 'logging/setLevel', { level: 'debug' });
      expect(response.error?.code).toBe(-32601);
      await kit.callTool('four', { tag: 'after' });
      await responseRecorded(kit);
      expect(kit.wire.notifications('notifications/message')).toEqual([]);
    });

    it('logging is advertised in server/discover', async () => {
      const kit = track(await sdk.connect(makeServer(sdk, logChannel())));
      const discover = kit.wire.fromClient().find((m) => m.message.method === 'server/discover')!;
      expect(kit.wire.responseTo(discover.message.id)!.message.result.capabilities.logging).toEqual({});
      const without = track(await sdk.connect(makeServer(sdk, undefined)));
      const d2 = without.wire.fromClient().find((m) => m.message.method === 'server/discover')!;
      expect(without.wire.responseTo(d2.message.id)!.message.result.capabilities.logging).toBeUndefined();
    });

    it('the server-wide logger never sends to a 2026-07-28 request, even one in flight that asked for debug', async () => {
      const logs = logChannel({ level: 'debug' }); // no sink: enabled() then says whether any client could get a message
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      let flooded!: () => void;
      const inside = new Promise<void>((r) => (flooded = r));
      const kit = track(await sdk.connect(makeServer(sdk, logs, { gate, onFlood: () => flooded() })));
      const result = kit.callTool('flood', { n: 1 }, { meta: { [LOG_LEVEL_META_KEY]: 'debug' } });
      await inside;
      expect(logs.logger.enabled('emergency')).toBe(false);
      logs.logger.emergency('server-wide during the call');
      logs.logger.child('boot').debug({ step: 'ready' });
      await sleep(20);
      open();
      await result;
      await responseRecorded(kit);
      logs.logger.emergency('server-wide after the call');
      await sleep(20);
      expect(logsOf(kit)).toEqual([{ level: 'info', data: { i: 0 } }]);
    });
  },
  { eras: ['modern'] },
);

describeEachSdk(
  'logging/setLevel (2025-era sessions)',
  (sdk) => {
    it('"verbose" gets -32602 and the previous level stays', async () => {
      const kit = track(await sdk.connect(makeServer(sdk, logChannel())));
      expect(await kit.client.setLoggingLevel('warning')).toEqual({});
      const bad = await rawRequest(kit, 'bad-0', 'logging/setLevel', { level: 'verbose' });
      expect(bad.error.code).toBe(-32602);
      expect(bad.error.message).toMatch(/verbose/);
      expect(bad.error.data).toEqual({ level: 'verbose', expected: [...LOG_LEVELS] });
      // Malformed params are refused the same way.
      for (const [i, params] of [{}, { level: 3 }, { level: 'INFO' }].entries()) {
        expect((await rawRequest(kit, `bad-${i + 1}`, 'logging/setLevel', params)).error.code).toBe(-32602);
      }
      // Proof the level is still `warning`: not reset to the default `info`, not changed to anything else.
      await kit.callTool('four', {
        tag: 'after',
        levels: ['debug', 'info', 'notice', 'warning', 'error', 'emergency'],
      });
      expect(logsOf(kit).map((p) => p.level)).toEqual(['warning', 'error', 'emergency']);
    });

    it('a valid setLevel answers {} and applies to later calls of that session', async () => {
      const kit = track(await sdk.connect(makeServer(sdk, logChannel())));
      const ok = await rawRequest(kit, 'ok-1', 'logging/setLevel', { level: 'debug' });
      expect(ok.result).toEqual({});
      await kit.callTool('four', { tag: 'x' });
      expect(logsOf(kit).map((p) => p.level)).toEqual(FOUR);
    });

    it("level 'off' sends nothing until the client asks", async () => {
      const kit = track(await sdk.connect(makeServer(sdk, logChannel({ level: 'off' }))));
      await kit.callTool('four', { tag: 'before' });
      expect(logsOf(kit)).toEqual([]);
      await kit.client.setLoggingLevel('info');
      await kit.callTool('four', { tag: 'after' });
      expect(logsOf(kit).map((p) => [p.level, p.data.tag])).toEqual([
        ['info', 'after'],
        ['warning', 'after'],
        ['error', 'after'],
      ]);
    });

    it('a 2026-style _meta level on a 2025-era call is ignored: the session level rules', async () => {
      const kit = track(await sdk.connect(makeServer(sdk, logChannel())));
      await kit.callTool('four', { tag: 'm' }, { meta: { [LOG_LEVEL_META_KEY]: 'error' } });
      expect(logsOf(kit).map((p) => p.level)).toEqual(['info', 'warning', 'error']);
    });

    it('logging is advertised exactly when the channel is installed; without it setLevel is -32601', async () => {
      const withLogs = track(await sdk.connect(makeServer(sdk, logChannel())));
      expect(withLogs.client.getServerCapabilities()?.logging).toEqual({});
      const without = track(await sdk.connect(makeServer(sdk, undefined)));
      expect(without.client.getServerCapabilities()?.logging).toBeUndefined();
      expect((await rawRequest(without, 'set-1', 'logging/setLevel', { level: 'info' })).error.code).toBe(-32601);
    });
  },
  { eras: ['legacy'] },
);

describeEachSdk('rate limit', (sdk) => {
  it('a 10 000-line flood: at most the budget plus one summary, the count adds up, the server stays responsive', async () => {
    const burst = 50;
    const perSecond = 10;
    let floodMs = -1;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const kit = track(
      await sdk.connect(
        makeServer(sdk, logChannel({ rateLimit: { burst, perSecond } }), { gate, onFlood: (ms) => (floodMs = ms) }),
      ),
    );
    const opts = await askLevel(sdk, kit, 'info');

    const result = kit.callTool('flood', { n: 10_000 }, opts);
    await kit.wire.waitFor((m) => m.message.method === 'notifications/message', 5_000);
    while (floodMs < 0) await sleep(5);
    // The call is still open (held by the gate) after the flood: the server answers promptly
    // (ping on 2025 sessions; server/discover on 2026-07-28, which has no ping).
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await kit.ping(5_000);
      expect(performance.now() - t0).toBeLessThan(2_000);
    }
    open();
    expect((await result).content).toEqual([{ type: 'text', text: 'flooded 10000' }]);
    await responseRecorded(kit);

    const all = logsOf(kit);
    const lines = all.filter((p) => p.logger === undefined);
    const summaries = all.filter((p) => p.logger === CHANNEL_LOGGER);
    const budget = burst + Math.ceil((perSecond * (floodMs + 50)) / 1000);
    expect(lines.length).toBeGreaterThanOrEqual(burst);
    expect(lines.length).toBeLessThanOrEqual(budget);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!.level).toBe('warning');
    // Nothing lost silently: what arrived plus what the summary counts is everything logged.
    expect(lines.length + summaries[0]!.data.dropped).toBe(10_000);
    // Lines arrive in order, with no gaps before the drops began.
    expect(lines.slice(0, burst).map((p) => p.data.i)).toEqual([...Array(burst).keys()]);
    const id = callIdOf(kit);
    if (sdk.era === 'modern')
      for (const m of kit.wire.notifications('notifications/message'))
        expect(m.stream).toEqual({ kind: 'post', requestIds: [id] });
  });

  it('default budget (100, then 20/s); the summary is the last message before the response', async () => {
    let floodMs = -1;
    const kit = track(await sdk.connect(makeServer(sdk, logChannel(), { onFlood: (ms) => (floodMs = ms) })));
    const opts = await askLevel(sdk, kit, 'info');
    const r = await kit.callTool('flood', { n: 10_000 }, opts);
    await responseRecorded(kit);
    expect(r.content).toEqual([{ type: 'text', text: 'flooded 10000' }]);
    const all = logsOf(kit);
    const summaries = all.filter((p) => p.logger === CHANNEL_LOGGER);
    expect(summaries).toHaveLength(1);
    expect(all.length - 1).toBeLessThanOrEqual(100 + Math.ceil((20 * (floodMs + 50)) / 1000));
    expect(all.length - 1 + summaries[0]!.data.dropped).toBe(10_000);
    const id = callIdOf(kit);
    const fromServer = kit.wire.fromServer();
    const respIdx = fromServer.findIndex((m) => m.message.id === id && m.message.method === undefined);
    expect(fromServer[respIdx - 1]!.message.params.logger).toBe(CHANNEL_LOGGER);
  });

  it('a summary at error level when errors were dropped reaches a client that asked for error', async () => {
    const kit = track(await sdk.connect(makeServer(sdk, logChannel({ rateLimit: { burst: 2, perSecond: 0.01 } }))));
    const opts = await askLevel(sdk, kit, 'error');
    await kit.callTool('four', { tag: 'e', levels: ['error', 'error', 'critical', 'info', 'error'] }, opts);
    await responseRecorded(kit);
    expect(logsOf(kit).map((p) => [p.level, p.logger ?? null])).toEqual([
      ['error', null],
      ['error', null],
      ['critical', CHANNEL_LOGGER],
    ]);
    expect(logsOf(kit)[2]!.data).toEqual({ dropped: 2 });
  });

  // 2025: one bucket per session, shared by its calls. 2026-07-28: one bucket per request.
  it(
    sdk.era === 'modern'
      ? 'each request has its own bucket: a flood does not starve the next request of the same client'
      : 'the bucket is per session: a flood in one session does not starve another',
    async () => {
      const logs = logChannel({ rateLimit: { burst: 5, perSecond: 0.01 } }); // practically no refill during the test
      const a = track(await sdk.connect(makeServer(sdk, logs)));
      const b = sdk.era === 'modern' ? a : track(await sdk.connect(makeServer(sdk, logs)));
      const optsA = await askLevel(sdk, a, 'info');
      const optsB = sdk.era === 'modern' ? optsA : {};
      await a.callTool('flood', { n: 1_000 }, optsA);
      await b.callTool('four', { tag: 'b' }, optsB);
      await responseRecorded(b, 'b');
      const idB = callIdOf(b, 'b');
      const bLines = b.wire.notifications('notifications/message').filter((m) => m.message.params.data?.tag === 'b');
      expect(bLines.map((m) => m.message.params.level)).toEqual(['info', 'warning', 'error']);
      if (sdk.era === 'modern') for (const m of bLines) expect(m.stream).toEqual({ kind: 'post', requestIds: [idB] });
      const aLines = a.wire
        .notifications('notifications/message')
        .filter((m) => m.message.params.data?.i !== undefined);
      expect(aLines).toHaveLength(5);
    },
  );

  it('after a cancel nothing more goes on the wire for the call (no summary either); the sink still gets the lines', async () => {
    const entries: LogEntry[] = [];
    let cancelled!: () => void;
    const afterCancel = new Promise<void>((r) => (cancelled = r));
    const logs = logChannel({ rateLimit: { burst: 5, perSecond: 1 }, sink: (e) => entries.push(e) });
    const kit = track(
      await sdk.connect(
        makeServer(sdk, logs, {}, (server) => {
          server.registerTool(
            'cancellable',
            { inputSchema: {} },
            handler(async (_a: unknown, ctx) => {
              for (let i = 0; i < 100; i++) ctx.log.info({ i });
              await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
              ctx.log.error('cleanup after cancel');
              cancelled();
              return { content: [] };
            }),
          );
        }),
      ),
    );
    const opts = await askLevel(sdk, kit, 'info');
    const call = kit.start('cancellable', {}, { id: 'c-1', ...opts });
    await kit.wire.waitFor(
      (m) => m.message.method === 'notifications/message' && m.message.params.data?.i === 4,
      5_000,
    );
    // 2025: notifications/cancelled. 2026-07-28 over HTTP: the client closes the response stream.
    await call.cancel('user stop');
    await afterCancel;
    await sleep(50);
    const before = kit.wire.fromServer().filter((m) => m.message.method === 'notifications/message');
    expect(before.map((m) => m.message.params.data)).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
    expect(kit.wire.responseTo('c-1')).toBeUndefined();
    if (sdk.era === 'legacy') {
      const cancelSeq = kit.wire.fromClient().find((m) => m.message.method === 'notifications/cancelled')!.seq;
      expect(kit.wire.fromServer().filter((m) => m.seq > cancelSeq)).toEqual([]);
    }
    expect(entries).toHaveLength(101);
    expect(entries.at(-1)).toMatchObject({ level: 'error', data: 'cleanup after cancel' });
  });

  it('rateLimit: false sends every line', async () => {
    const kit = track(await sdk.connect(makeServer(sdk, logChannel({ rateLimit: false }))));
    const opts = await askLevel(sdk, kit, 'info');
    await kit.callTool('flood', { n: 500 }, opts);
    await responseRecorded(kit);
    expect(logsOf(kit)).toHaveLength(500);
  });
});

describeEachSdk('sink and redaction', (sdk) => {
  it('the sink gets every message regardless of level; redaction applies to sink and wire', async () => {
    const entries: LogEntry[] = [];
    const logs = logChannel({
      level: 'error',
      sink: (e) => entries.push(e),
      redact: (e) => ({ ...e, data: JSON.parse(JSON.stringify(e.data).replaceAll('hunter2', '***')) }),
    });
    const kit = track(await sdk.connect(makeServer(sdk, logs)));
    await kit.callTool('four', { tag: 's' }, sdk.era === 'modern' ? { meta: { [LOG_LEVEL_META_KEY]: 'error' } } : {});
    await responseRecorded(kit);
    const id = callIdOf(kit);
    expect(entries.map((e) => e.level)).toEqual(FOUR);
    for (const e of entries) {
      expect(e.data).toEqual({ tag: 's', level: e.level, secret: '***' });
      expect(e.call).toEqual({ method: 'tools/call', name: 'four', requestId: id });
      expect(typeof e.time).toBe('number');
    }
    expect(logsOf(kit)).toEqual([{ level: 'error', data: { tag: 's', level: 'error', secret: '***' } }]);
    expect(kit.wire.transcript()).not.toContain('hunter2');
  });

  it('the sink is not rate-limited; a redact that throws withholds the message (fail closed); a throwing sink harms nothing', async () => {
    const entries: LogEntry[] = [];
    const kit = track(
      await sdk.connect(
        makeServer(sdk, logChannel({ rateLimit: { burst: 2, perSecond: 1 }, sink: (e) => entries.push(e) })),
      ),
    );
    await kit.callTool('flood', { n: 300 }, await askLevel(sdk, kit, 'info'));
    expect(entries).toHaveLength(300);

    const failing = logChannel({
      redact: () => {
        throw new Error('bug in redact with hunter2');
      },
    });
    const k2 = track(await sdk.connect(makeServer(sdk, failing)));
    await k2.callTool('four', { tag: 'r', levels: ['error'] }, await askLevel(sdk, k2, 'info'));
    await responseRecorded(k2);
    expect(logsOf(k2)).toEqual([
      { level: 'error', logger: CHANNEL_LOGGER, data: { error: 'redaction failed; message withheld' } },
    ]);
    expect(k2.wire.transcript()).not.toContain('hunter2');

    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      const throwing = logChannel({
        sink: () => {
          throw new Error('disk full');
        },
      });
      const k3 = track(await sdk.connect(makeServer(sdk, throwing)));
      const r = await k3.callTool('four', { tag: 't' }, await askLevel(sdk, k3, 'info'));
      await responseRecorded(k3);
      expect(r.content).toEqual([{ type: 'text', text: 'done t' }]);
      expect(logsOf(k3).map((p) => p.level)).toEqual(['info', 'warning', 'error']);
      await sleep(20);
      expect(warnings.filter((w) => w.includes('disk full'))).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('the stderr sink writes one JSON line per entry', async () => {
    const lines: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      const kit = track(await sdk.connect(makeServer(sdk, logChannel({ sink: 'stderr' }))));
      await kit.callTool('four', { tag: 'e' });
    } finally {
      process.stderr.write = write;
    }
    const parsed = lines.filter((l) => l.includes('"tag":"e"')).map((l) => JSON.parse(l));
    expect(parsed.map((e) => e.level)).toEqual(FOUR);
    expect(lines.every((l) => l.endsWith('\n'))).toBe(true);
  });
});

describeEachSdk('per-call logger', (sdk) => {
  it('child names, Error data, callLogger(), enabled(), and nothing on the wire after the response', async () => {
    const entries: LogEntry[] = [];
    const logs = logChannel({ level: 'notice', sink: (e) => entries.push(e) });
    let late: (() => void) | undefined;
    let enabled: Record<string, boolean> = {};
    const kit = track(
      await sdk.connect(
        makeServer(sdk, logs, { asyncContext: true }, (server) => {
          server.registerTool(
            'misc',
            { inputSchema: {} },
            handler(async (_a: unknown, ctx) => {
              const db = ctx.log.child('db');
              db.child('pool').warning({ waiting: 3 });
              callLogger().error(Object.assign(new Error('boom'), { code: 'E_BOOM' }));
              expect(callLogger()).toBe(ctx.log);
              enabled = { debug: ctx.log.enabled('debug'), notice: ctx.log.enabled('notice') };
              ctx.log.notice({ n: 1n, when: new Date(0), nan: NaN, fn: () => 1 });
              late = () => ctx.log.error('after the response');
              return { content: [{ type: 'text' as const, text: 'ok' }] };
            }),
          );
        }),
      ),
    );
    const r = await kit.callTool('misc', {}, sdk.era === 'modern' ? { meta: { [LOG_LEVEL_META_KEY]: 'notice' } } : {});
    await responseRecorded(kit);
    expect(r.content).toEqual([{ type: 'text', text: 'ok' }]);
    expect(logsOf(kit)).toEqual([
      { level: 'warning', logger: 'db.pool', data: { waiting: 3 } },
      { level: 'error', data: { name: 'Error', message: 'boom', code: 'E_BOOM' } },
      { level: 'notice', data: { n: '1', when: '1970-01-01T00:00:00.000Z', nan: 'NaN' } },
    ]);
    expect(enabled).toEqual({ debug: true /* the sink wants everything */, notice: true });
    const before = kit.wire.messages.length;
    late!();
    await sleep(20);
    expect(kit.wire.messages.length).toBe(before);
    expect(entries.at(-1)).toMatchObject({ level: 'error', data: 'after the response' });
    expect(() => callLogger()).toThrow(/outside a call/);
  });

  it('prompts/get and resources/read log through callLogger() too', async () => {
    const kit = track(
      await sdk.connect(
        makeServer(sdk, logChannel(), { asyncContext: true }, (server) => {
          server.registerPrompt('greeting', {}, () => {
            callLogger().info({ from: 'prompt' });
            return { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] };
          });
          server.registerResource('readme', 'file:///readme', {}, (uri: URL) => {
            callLogger().child('fs').notice({ read: uri.href });
            return { contents: [{ uri: uri.href, text: 'readme' }] };
          });
        }),
      ),
    );
    const meta = sdk.era === 'modern' ? { _meta: { [LOG_LEVEL_META_KEY]: 'info' } } : {};
    const prompt = await kit.client.getPrompt({ name: 'greeting', ...meta });
    const resource = await kit.client.readResource({ uri: 'file:///readme', ...meta });
    await sleep(20);
    expect(JSON.stringify([prompt, resource])).not.toContain('from');
    expect(logsOf(kit)).toEqual([
      { level: 'info', data: { from: 'prompt' } },
      { level: 'notice', logger: 'fs', data: { read: 'file:///readme' } },
    ]);
  });
});

// Sessions and the session-wide stream exist on 2025-era connections only: on 2026-07-28 the
// server-wide logger has nowhere to send (tested above in the 2026-07-28 block).
describeEachSdk(
  'server-wide logger (2025-era sessions)',
  (sdk) => {
    it('reaches every attached session at or above its own level (sessionless in-memory transports too)', async () => {
      const entries: LogEntry[] = [];
      const logs = logChannel({ sink: (e) => entries.push(e) });
      const s1 = track(await sdk.connect(makeServer(sdk, logs)));
      const s2 = track(await sdk.connect(makeServer(sdk, logs)));
      const s3 = track(await sdk.connect(makeServer(sdk, logs)));
      await s1.client.setLoggingLevel('error');
      await s3.client.setLoggingLevel('debug');

      logs.logger.debug('d');
      logs.logger.child('boot').info({ step: 'ready' });
      logs.logger.error(new Error('disk almost full'));
      await Promise.all([s1, s2, s3].map((k) => k.wire.waitFor((m) => m.message.params?.level === 'error', 2_000)));
      await sleep(20);

      expect(logsOf(s1)).toEqual([{ level: 'error', data: { name: 'Error', message: 'disk almost full' } }]);
      expect(logsOf(s2).map((p) => p.level)).toEqual(['info', 'error']);
      expect(logsOf(s2)[0]).toEqual({ level: 'info', logger: 'boot', data: { step: 'ready' } });
      expect(logsOf(s3).map((p) => p.level)).toEqual(['debug', 'info', 'error']);
      // The sink got each message once, without call info.
      expect(entries.map((e) => [e.level, e.logger, e.call])).toEqual([
        ['debug', undefined, undefined],
        ['info', 'boot', undefined],
        ['error', undefined, undefined],
      ]);
      // A closed session is forgotten.
      await s3.close();
      kits.splice(kits.indexOf(s3), 1);
      logs.logger.emergency('last');
      await s2.wire.waitFor((m) => m.message.params?.data === 'last', 2_000);
      expect(logsOf(s3).map((p) => p.level)).toEqual(['debug', 'info', 'error']);
    });

    it('server-wide drops are summarized to the session once the bucket allows', async () => {
      const logs = logChannel({ rateLimit: { burst: 3, perSecond: 2 } });
      const kit = track(await sdk.connect(makeServer(sdk, logs)));
      for (let i = 0; i < 100; i++) logs.logger.info({ i });
      const summary = await kit.wire.waitFor((m) => m.message.params?.logger === CHANNEL_LOGGER, 5_000);
      const lines = logsOf(kit).filter((p) => p.logger === undefined);
      expect(lines.slice(0, 3).map((p) => p.data.i)).toEqual([0, 1, 2]);
      expect(summary.message.params).toEqual({
        level: 'warning',
        logger: CHANNEL_LOGGER,
        data: { dropped: 100 - lines.length },
      });
      expect(summary.message.params.data.dropped).toBeGreaterThan(90);
    });
  },
  { eras: ['legacy'] },
);

// Stateful Streamable HTTP sessions are a 2025-era transport; the matrix runs legacy targets in
// memory, so the two-session case runs on v1's Streamable HTTP over 127.0.0.1.
describe('two stateful Streamable HTTP sessions [v1]', () => {
  it('S1 (error) gets only its error line on its own POST stream; S2 (default info) gets info+ and never S1 lines; results hold no logs', async () => {
    const logs = logChannel(); // default level: info
    http = await serveHttp(() => {
      const server = new McpServer({ name: 'log-test', version: '1.0.0' });
      tether(server, [logs]);
      server.registerTool(
        'four',
        { inputSchema: { tag: z.string() } },
        handler(async ({ tag }, ctx) => {
          for (const level of FOUR) ctx.log.log(level, { tag, level, secret: 'hunter2' });
          return { content: [{ type: 'text' as const, text: `done ${tag}` }] };
        }),
      );
      return server;
    });
    const s1 = track(await connectHttp(http.url));
    const s2 = track(await connectHttp(http.url));
    expect(s1.transport.sessionId).toBeDefined();
    expect(s1.transport.sessionId).not.toBe(s2.transport.sessionId);

    await s1.client.setLoggingLevel('error');
    const [r1, r2] = await Promise.all([s1.callTool('four', { tag: 'S1' }), s2.callTool('four', { tag: 'S2' })]);
    await Promise.all([responseRecorded(s1), responseRecorded(s2)]);

    // Logs never enter a tool result.
    expect(r1).toEqual({ content: [{ type: 'text', text: 'done S1' }] });
    expect(r2).toEqual({ content: [{ type: 'text', text: 'done S2' }] });

    const id1 = callIdOf(s1);
    const id2 = callIdOf(s2);
    const m1 = s1.wire.notifications('notifications/message');
    const m2 = s2.wire.notifications('notifications/message');
    expect(m1.map((m) => m.message.params)).toEqual([
      { level: 'error', data: { tag: 'S1', level: 'error', secret: 'hunter2' } },
    ]);
    expect(m1[0]!.stream).toEqual({ kind: 'post', requestIds: [id1] });
    expect(m2.map((m) => m.message.params.level)).toEqual(['info', 'warning', 'error']);
    for (const m of m2) {
      expect(m.message.params.data.tag).toBe('S2');
      expect(m.stream).toEqual({ kind: 'post', requestIds: [id2] });
    }
    // Each line arrived before its call's response, on the same stream.
    const resp1 = s1.wire.responseTo(id1)!;
    expect(m1.every((m) => m.seq < resp1.seq)).toBe(true);
  });
});

// serveStdio keeps ONE server instance for a whole 2026-07-28 stdio connection (createMcpHandler,
// the matrix's v2-modern, builds one per request): the per-request bucket and the server-wide
// logger's silence must hold without a fresh instance per request. Not a matrix case: v2 only.
describe('2026-07-28 over stdio: one server for many requests [v2]', () => {
  it('each request has its own level and bucket; the server-wide logger never reaches the wire', async () => {
    const logs = logChannel({ level: 'debug', rateLimit: { burst: 5, perSecond: 0.01 } });
    let instances = 0;
    const [clientTransport, serverTransport] = InMemoryTransportV2.createLinkedPair();
    const served = serveStdio(
      () => {
        instances++;
        const server = tether(new McpServerV2({ name: 'log-test', version: '1.0.0' }), [logs]);
        server.registerTool(
          'four',
          { inputSchema: z.object({ tag: z.string() }) },
          handler(async ({ tag }: { tag: string }, ctx) => {
            logs.logger.emergency({ serverWide: tag });
            for (const level of FOUR) ctx.log.log(level, { tag });
            return { content: [{ type: 'text' as const, text: `done ${tag}` }] };
          }),
        );
        server.registerTool(
          'flood',
          { inputSchema: z.object({ n: z.number() }) },
          handler(async ({ n }: { n: number }, ctx) => {
            for (let i = 0; i < n; i++) ctx.log.info({ i });
            return { content: [] };
          }),
        );
        return server;
      },
      { transport: serverTransport },
    );
    const received: any[] = [];
    const client = new ClientV2({ name: 'c', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(clientTransport);
    const chained = clientTransport.onmessage!;
    clientTransport.onmessage = (m, extra) => (received.push(m), chained(m, extra));
    const call = (name: string, args: Record<string, unknown>, level?: LogLevel) =>
      client.request({
        method: 'tools/call',
        params: { name, arguments: args, ...(level && { _meta: { [LOG_LEVEL_META_KEY]: level } }) },
      } as never);
    const messages = () => received.filter((m) => m.method === 'notifications/message').map((m) => m.params);
    try {
      logs.logger.emergency({ serverWide: 'before' });
      await call('flood', { n: 100 }, 'info');
      expect(messages().filter((p) => p.logger === undefined)).toHaveLength(5);
      expect(messages().at(-1)).toEqual({ level: 'warning', logger: CHANNEL_LOGGER, data: { dropped: 95 } });
      // No session anywhere wants server-wide messages (and there is no sink).
      expect(logs.logger.enabled('emergency')).toBe(false);
      received.length = 0;
      // Same connection, same server instance: the next request has a full bucket of its own and its own level.
      await call('four', { tag: 'b' }, 'warning');
      expect(messages()).toEqual([
        { level: 'warning', data: { tag: 'b' } },
        { level: 'error', data: { tag: 'b' } },
      ]);
      received.length = 0;
      await call('four', { tag: 'c' }); // no level: no logs, whatever options.level says
      logs.logger.emergency({ serverWide: 'after' });
      await sleep(20);
      expect(messages()).toEqual([]);
      expect(instances).toBe(1);
    } finally {
      await client.close();
      await served.close();
    }
  });
});

function catchMessage(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

describe('logger objects', () => {
  it('are plain objects of bound functions: a copy keeps them, and they work detached', () => {
    const seen: LogEntry[] = [];
    const ch = logChannel({ sink: (e) => void seen.push(e) });
    const copy = { ...ch.logger };
    expect(Object.keys(copy).sort()).toEqual([...LOG_LEVELS, 'child', 'enabled', 'log', 'name'].sort());
    const { info, child } = copy;
    info({ a: 1 });
    child('db').warning('slow');
    expect(seen.map((e) => [e.level, e.logger])).toEqual([
      ['info', undefined],
      ['warning', 'db'],
    ]);
    expect(JSON.parse(JSON.stringify(ch.logger))).toEqual({});
  });
});
