/**
 * log-channel on the wire: a real SDK client and a real SDK server (McpServer) through
 * @mcp-tether/core/testing, in memory and over Streamable HTTP on 127.0.0.1.
 */
import { handler, tether } from '@mcp-tether/core';
import { connect, connectHttp, serveHttp, type HttpHarness, type TestClient } from '@mcp-tether/core/testing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CHANNEL_LOGGER, callLogger, logChannel, type LogChannel, type LogEntry, type LogLevel } from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FOUR: LogLevel[] = ['debug', 'info', 'warning', 'error'];

type Params = { level: LogLevel; logger?: string; data: any };
const logsOf = (kit: TestClient): Params[] => kit.wire.notifications('notifications/message').map((m) => m.message.params as Params);
const callIdOf = (kit: TestClient, tag?: string): string | number =>
  kit.wire.fromClient().find((m) => m.message.method === 'tools/call' && (tag === undefined || m.message.params?.arguments?.tag === tag))!.message.id;
/** Wait until the response to the (only or tagged) tools/call was recorded: on one stream, every earlier message was recorded too. */
const responseRecorded = (kit: TestClient, tag?: string) => kit.wire.waitFor((m) => m.direction === 'server->client' && m.message.method === undefined && m.message.id === callIdOf(kit, tag), 5_000);

/** A server with a tool that logs `data` at each of `levels` (and a tool that floods). */
function makeServer(logs: LogChannel | undefined, hooks: { gate?: Promise<void>; onFlood?: (ms: number) => void } = {}): McpServer {
  const server = new McpServer({ name: 'log-test', version: '1.0.0' });
  if (logs) tether(server, [logs]);
  server.registerTool(
    'four',
    { inputSchema: { tag: z.string(), levels: z.array(z.string()).optional() } },
    handler(async ({ tag, levels }, ctx) => {
      for (const level of (levels as LogLevel[] | undefined) ?? FOUR) ctx.log.log(level, { tag, level, secret: 'hunter2' });
      return { content: [{ type: 'text' as const, text: `done ${tag}` }] };
    }),
  );
  server.registerTool(
    'flood',
    { inputSchema: { n: z.number() } },
    handler(async ({ n }, ctx) => {
      const t0 = Date.now();
      for (let i = 0; i < n; i++) ctx.log.info({ i });
      hooks.onFlood?.(Date.now() - t0);
      await hooks.gate;
      return { content: [{ type: 'text' as const, text: `flooded ${n}` }] };
    }),
  );
  return server;
}

const kits: TestClient[] = [];
let http: HttpHarness | undefined;
afterEach(async () => {
  for (const k of kits.splice(0)) await k.close().catch(() => {});
  await http?.close();
  http = undefined;
});
const track = <T extends TestClient>(k: T): T => {
  kits.push(k);
  return k;
};

describe('two stateful Streamable HTTP sessions', () => {
  it('S1 (error) gets only its error line on its own POST stream; S2 (default info) gets info+ and never S1 lines; results hold no logs', async () => {
    const logs = logChannel(); // default level: info
    http = await serveHttp(() => makeServer(logs));
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
    expect(m1.map((m) => m.message.params)).toEqual([{ level: 'error', data: { tag: 'S1', level: 'error', secret: 'hunter2' } }]);
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

describe('logging/setLevel', () => {
  it('"verbose" gets -32602 and the previous level stays', async () => {
    const kit = track(await connect(makeServer(logChannel())));
    await kit.client.setLoggingLevel('warning');
    const bad = kit.client.request({ method: 'logging/setLevel', params: { level: 'verbose' } } as never, EmptyResultSchema);
    await expect(bad).rejects.toMatchObject({ code: -32602 });
    const errorResponse = kit.wire.fromServer().find((m) => m.message.error);
    expect(errorResponse!.message.error.code).toBe(-32602);
    expect(errorResponse!.message.error.message).toMatch(/verbose/);
    // Malformed params are refused the same way.
    for (const params of [{}, { level: 3 }, { level: 'INFO' }]) {
      await expect(kit.client.request({ method: 'logging/setLevel', params } as never, EmptyResultSchema)).rejects.toMatchObject({ code: -32602 });
    }
    // Proof the level is still `warning`: not reset to the default `info`, not changed to anything else.
    await kit.callTool('four', { tag: 'after', levels: ['debug', 'info', 'notice', 'warning', 'error', 'emergency'] });
    expect(logsOf(kit).map((p) => p.level)).toEqual(['warning', 'error', 'emergency']);
  });

  it('a valid setLevel answers {} and applies to later calls of that session', async () => {
    const kit = track(await connect(makeServer(logChannel())));
    const ok = await kit.client.request({ method: 'logging/setLevel', params: { level: 'debug' } } as never, EmptyResultSchema);
    expect(ok).toEqual({});
    await kit.callTool('four', { tag: 'x' });
    expect(logsOf(kit).map((p) => p.level)).toEqual(FOUR);
  });

  it("level 'off' sends nothing until the client asks", async () => {
    const kit = track(await connect(makeServer(logChannel({ level: 'off' }))));
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
});

describe('capability', () => {
  it('logging is advertised exactly when the channel is installed', async () => {
    const withLogs = track(await connect(makeServer(logChannel())));
    expect(withLogs.client.getServerCapabilities()?.logging).toEqual({});
    const without = track(await connect(makeServer(undefined)));
    expect(without.client.getServerCapabilities()?.logging).toBeUndefined();
    await expect(without.client.request({ method: 'logging/setLevel', params: { level: 'info' } } as never, EmptyResultSchema)).rejects.toMatchObject({ code: -32601 });
  });
});

describe('rate limit', () => {
  it('10 000 lines in a tight loop (HTTP): at most the budget plus one summary, the count adds up, ping stays prompt', async () => {
    const burst = 50;
    const perSecond = 10;
    let floodMs = -1;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    http = await serveHttp(() => makeServer(logChannel({ rateLimit: { burst, perSecond } }), { gate, onFlood: (ms) => (floodMs = ms) }));
    const kit = track(await connectHttp(http.url));

    const result = kit.callTool('flood', { n: 10_000 });
    await kit.wire.waitFor((m) => m.message.method === 'notifications/message', 5_000);
    while (floodMs < 0) await sleep(5);
    // The call is still open (held by the gate) after the flood: the server answers ping promptly.
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await kit.ping(5_000);
      expect(performance.now() - t0).toBeLessThan(2_000);
    }
    open();
    expect(await result).toEqual({ content: [{ type: 'text', text: 'flooded 10000' }] });
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
    // All of it rode the call's POST stream, before the response.
    const id = callIdOf(kit);
    for (const m of kit.wire.notifications('notifications/message')) expect(m.stream).toEqual({ kind: 'post', requestIds: [id] });
  });

  it('default budget (100, then 20/s) in memory; the summary is the last message before the response', async () => {
    let floodMs = -1;
    const kit = track(await connect(makeServer(logChannel(), { onFlood: (ms) => (floodMs = ms) })));
    const r = await kit.callTool('flood', { n: 10_000 });
    expect(r).toEqual({ content: [{ type: 'text', text: 'flooded 10000' }] });
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

  it('the bucket is per session: a flood in one session does not starve another', async () => {
    const logs = logChannel({ rateLimit: { burst: 5, perSecond: 0.01 } }); // practically no refill during the test
    const a = track(await connect(makeServer(logs)));
    const b = track(await connect(makeServer(logs)));
    await a.callTool('flood', { n: 1_000 });
    await b.callTool('four', { tag: 'b' });
    expect(logsOf(b).map((p) => p.level)).toEqual(['info', 'warning', 'error']);
    expect(logsOf(a).filter((p) => p.logger === undefined)).toHaveLength(5);
  });

  it('after a cancel nothing more goes on the wire for the call (no summary either); the sink still gets the lines', async () => {
    const entries: LogEntry[] = [];
    const server = makeServer(logChannel({ rateLimit: { burst: 5, perSecond: 1 }, sink: (e) => entries.push(e) }));
    let cancelled!: () => void;
    const afterCancel = new Promise<void>((r) => (cancelled = r));
    server.registerTool('cancellable', { inputSchema: {} }, handler(async (_a, ctx) => {
      for (let i = 0; i < 100; i++) ctx.log.info({ i });
      await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
      ctx.log.error('cleanup after cancel');
      cancelled();
      return { content: [] };
    }));
    const kit = track(await connect(server));
    const call = kit.start('cancellable', {}, { id: 'c-1' });
    await kit.wire.waitFor((m) => m.message.method === 'notifications/message' && m.message.params.data?.i === 4, 5_000);
    await call.cancel('user stop');
    await afterCancel;
    await sleep(50);
    const cancelSeq = kit.wire.fromClient().find((m) => m.message.method === 'notifications/cancelled')!.seq;
    expect(kit.wire.fromServer().filter((m) => m.seq > cancelSeq)).toEqual([]);
    // The burst; the dropped lines are not summarized after the cancel (only a mid-call summary, had a second passed, could precede it).
    expect(logsOf(kit).filter((p) => p.logger === undefined)).toHaveLength(5);
    expect(entries).toHaveLength(101);
    expect(entries.at(-1)).toMatchObject({ level: 'error', data: 'cleanup after cancel' });
  });

  it('rateLimit: false sends every line', async () => {
    const kit = track(await connect(makeServer(logChannel({ rateLimit: false }))));
    await kit.callTool('flood', { n: 500 });
    expect(logsOf(kit)).toHaveLength(500);
  });
});

describe('sink and redaction', () => {
  it('the sink gets every message regardless of level; redaction applies to sink and wire', async () => {
    const entries: LogEntry[] = [];
    const logs = logChannel({
      level: 'error',
      sink: (e) => entries.push(e),
      redact: (e) => ({ ...e, data: JSON.parse(JSON.stringify(e.data).replaceAll('hunter2', '***')) }),
    });
    const kit = track(await connect(makeServer(logs)));
    await kit.callTool('four', { tag: 's' });
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
    const logs = logChannel({ rateLimit: { burst: 2, perSecond: 1 }, sink: (e) => entries.push(e) });
    const kit = track(await connect(makeServer(logs)));
    await kit.callTool('flood', { n: 300 });
    expect(entries).toHaveLength(300);

    const failing = logChannel({ redact: () => { throw new Error('bug in redact with hunter2'); } });
    const k2 = track(await connect(makeServer(failing)));
    await k2.callTool('four', { tag: 'r', levels: ['error'] });
    expect(logsOf(k2)).toEqual([{ level: 'error', logger: CHANNEL_LOGGER, data: { error: 'redaction failed; message withheld' } }]);
    expect(k2.wire.transcript()).not.toContain('hunter2');

    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      const throwing = logChannel({ sink: () => { throw new Error('disk full'); } });
      const k3 = track(await connect(makeServer(throwing)));
      const r = await k3.callTool('four', { tag: 't' });
      expect(r).toEqual({ content: [{ type: 'text', text: 'done t' }] });
      expect(logsOf(k3).map((p) => p.level)).toEqual(['info', 'warning', 'error']);
      await sleep(20);
      expect(warnings.filter((w) => w.includes('disk full'))).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('server-wide logger', () => {
  it('reaches every attached session at or above its own level (sessionless in-memory transports too)', async () => {
    const entries: LogEntry[] = [];
    const logs = logChannel({ sink: (e) => entries.push(e) });
    const s1 = track(await connect(makeServer(logs)));
    const s2 = track(await connect(makeServer(logs)));
    const s3 = track(await connect(makeServer(logs)));
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
    const kit = track(await connect(makeServer(logs)));
    for (let i = 0; i < 100; i++) logs.logger.info({ i });
    const summary = await kit.wire.waitFor((m) => m.message.params?.logger === CHANNEL_LOGGER, 5_000);
    const lines = logsOf(kit).filter((p) => p.logger === undefined);
    expect(lines.slice(0, 3).map((p) => p.data.i)).toEqual([0, 1, 2]);
    expect(summary.message.params).toEqual({ level: 'warning', logger: CHANNEL_LOGGER, data: { dropped: 100 - lines.length } });
    expect(summary.message.params.data.dropped).toBeGreaterThan(90);
  });
});

describe('per-call logger', () => {
  it('child names, Error data, callLogger(), enabled(), and nothing on the wire after the response', async () => {
    const entries: LogEntry[] = [];
    const logs = logChannel({ level: 'notice', sink: (e) => entries.push(e) });
    const server = makeServer(logs);
    let late: (() => void) | undefined;
    let enabled: Record<string, boolean> = {};
    server.registerTool('misc', { inputSchema: {} }, handler(async (_a, ctx) => {
      const db = ctx.log.child('db');
      db.child('pool').warning({ waiting: 3 });
      callLogger().error(Object.assign(new Error('boom'), { code: 'E_BOOM' }));
      expect(callLogger()).toBe(ctx.log);
      enabled = { debug: ctx.log.enabled('debug'), notice: ctx.log.enabled('notice') };
      ctx.log.notice({ n: 1n, when: new Date(0), nan: NaN, fn: () => 1 });
      late = () => ctx.log.error('after the response');
      return { content: [{ type: 'text' as const, text: 'ok' }] };
    }));
    const kit = track(await connect(server));
    const r = await kit.callTool('misc', {});
    expect(r).toEqual({ content: [{ type: 'text', text: 'ok' }] });
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

  it('enabled() follows the client level when there is no sink; bad input gets clear errors', async () => {
    const server = makeServer(logChannel());
    const seen: unknown[] = [];
    server.registerTool('probe', { inputSchema: {} }, handler(async (_a, ctx) => {
      seen.push(ctx.log.enabled('debug'), ctx.log.enabled('info'));
      seen.push(catchMessage(() => ctx.log.log('verbose' as LogLevel, 'x')));
      seen.push(catchMessage(() => ctx.log.child('')));
      return { content: [] };
    }));
    const kit = track(await connect(server));
    await kit.callTool('probe', {});
    expect(seen[0]).toBe(false);
    expect(seen[1]).toBe(true);
    expect(seen[2]).toMatch(/unknown log level "verbose"/);
    expect(seen[3]).toMatch(/non-empty string/);
    expect(() => logChannel({ level: 'verbose' as LogLevel })).toThrow(TypeError);
    expect(() => logChannel({ rateLimit: { burst: 0, perSecond: 1 } })).toThrow(TypeError);
    expect(() => logChannel({ rateLimit: { burst: 1, perSecond: 0 } })).toThrow(TypeError);
    expect(() => logChannel({ sink: 'stdout' as 'stderr' })).toThrow(TypeError);
  });

  it('prompts/get and resources/read log through callLogger() too', async () => {
    const server = makeServer(logChannel());
    server.registerPrompt('greeting', {}, () => {
      callLogger().info({ from: 'prompt' });
      return { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] };
    });
    server.registerResource('readme', 'file:///readme', {}, (uri) => {
      callLogger().child('fs').notice({ read: uri.href });
      return { contents: [{ uri: uri.href, text: 'readme' }] };
    });
    const kit = track(await connect(server));
    const prompt = await kit.client.getPrompt({ name: 'greeting' });
    const resource = await kit.client.readResource({ uri: 'file:///readme' });
    expect(JSON.stringify([prompt, resource])).not.toContain('from');
    expect(logsOf(kit)).toEqual([
      { level: 'info', data: { from: 'prompt' } },
      { level: 'notice', logger: 'fs', data: { read: 'file:///readme' } },
    ]);
  });

  it("the stderr sink writes one JSON line per entry", async () => {
    const lines: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      const kit = track(await connect(makeServer(logChannel({ sink: 'stderr' }))));
      await kit.callTool('four', { tag: 'e' });
    } finally {
      process.stderr.write = write;
    }
    const parsed = lines.filter((l) => l.includes('"tag":"e"')).map((l) => JSON.parse(l));
    expect(parsed.map((e) => e.level)).toEqual(FOUR);
    expect(lines.every((l) => l.endsWith('\n'))).toBe(true);
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

