/**
 * 2026-07-28 (modern era) behaviour. There is no wire path for it yet: the v1 adapter only makes
 * `legacy` calls and the v2 adapter has not landed. These tests drive the middleware with a
 * hand-built CallContext and ServerHost, which is what an adapter gives it.
 */
import { JsonRpcErrorCode, ProtocolError, type CallContext, type JsonObject, type Notification, type OutboundEvent, type RequestInfo, type ServerHost } from '@mcp-tether/core';
import { describe, expect, it } from 'vitest';
import { CHANNEL_LOGGER, LOG_LEVEL_META_KEY, LOG_LEVELS, logChannel, type LogChannel, type LogEntry } from '../src/index.js';

type Handler = (params: JsonObject, info: RequestInfo) => JsonObject | Promise<JsonObject>;

function fakeHost() {
  const handlers = new Map<string, Handler>();
  const notified: Notification[] = [];
  const capabilities: JsonObject[] = [];
  const host: ServerHost = {
    sdk: 'v2',
    sessionId: () => undefined,
    clientCapabilities: () => ({}),
    handleRequest: (method, h) => void handlers.set(method, h),
    registerCapabilities: (c) => void capabilities.push(c),
    notify: async (n) => void notified.push(n),
    request: async () => ({}),
    onClose: () => {},
  };
  return { host, handlers, notified, capabilities };
}

let nextId = 1;
/** A modern-era call context whose event tap is just this channel, then a recording sink. */
function modernCall(channel: LogChannel, host: ServerHost, meta: JsonObject) {
  const sent: Notification[] = [];
  const ctx = {
    method: 'tools/call',
    name: 'tool',
    toolName: 'tool',
    args: {},
    annotations: {},
    requestId: nextId++,
    sessionId: undefined,
    principal: undefined,
    era: 'modern',
    protocolVersion: '2026-07-28',
    meta,
    progressToken: undefined,
    clientCapabilities: {},
    channel: false,
    signal: new AbortController().signal,
    startedAt: Date.now(),
    lastProgress: undefined,
    completed: false,
    inputResponses: undefined,
    requestState: undefined,
    host,
    raw: undefined,
    state: new Map(),
    abort: () => {},
    request: async () => ({}),
    emit: async (event: OutboundEvent, origin?: unknown) => {
      const sink = async (e: OutboundEvent) => {
        if (e.type === 'notification') sent.push(e.notification);
      };
      if (origin === channel) return sink(event);
      await channel.onEvent!(ctx, event, sink);
    },
  } as unknown as CallContext;
  return { ctx, sent };
}

const info = (era: 'legacy' | 'modern'): RequestInfo => ({ requestId: 1, sessionId: undefined, era, meta: {}, signal: new AbortController().signal });

describe('2026-07-28 requests (hand-built context)', () => {
  it('no _meta level: no notifications/message for the request (the sink still gets everything)', async () => {
    const entries: LogEntry[] = [];
    const channel = logChannel({ sink: (e) => entries.push(e) });
    const { host } = fakeHost();
    channel.setup!(host);
    const { ctx, sent } = modernCall(channel, host, {});
    await channel.handle!(ctx, async () => {
      for (const l of LOG_LEVELS) ctx.log.log(l, l);
      expect(ctx.log.enabled('emergency')).toBe(true); // the sink wants it
      return { content: [] };
    });
    expect(sent).toEqual([]);
    expect(entries.map((e) => e.level)).toEqual([...LOG_LEVELS]);
  });

  it('the _meta level filters per request; the session default and setLevel do not apply', async () => {
    const channel = logChannel({ level: 'debug' });
    const { host, handlers } = fakeHost();
    channel.setup!(host);
    // A legacy setLevel on the same host does not change what a modern request gets.
    await handlers.get('logging/setLevel')!({ level: 'emergency' }, info('legacy'));
    const a = modernCall(channel, host, { [LOG_LEVEL_META_KEY]: 'warning' });
    const b = modernCall(channel, host, { [LOG_LEVEL_META_KEY]: 'debug' });
    const run = (c: typeof a) =>
      channel.handle!(c.ctx, async () => {
        for (const l of LOG_LEVELS) c.ctx.log.log(l, l);
        return {};
      });
    await Promise.all([run(a), run(b)]);
    expect(a.sent.map((n) => n.params!.level)).toEqual(['warning', 'error', 'critical', 'alert', 'emergency']);
    expect(b.sent.map((n) => n.params!.level)).toEqual([...LOG_LEVELS]);
    expect(a.sent[0]).toEqual({ method: 'notifications/message', params: { level: 'warning', data: 'warning' } });
  });

  it('an unknown _meta level is -32602 and the handler does not run', async () => {
    const channel = logChannel();
    const { host } = fakeHost();
    channel.setup!(host);
    for (const bad of ['verbose', 42, null, 'WARNING']) {
      let ran = false;
      const { ctx } = modernCall(channel, host, { [LOG_LEVEL_META_KEY]: bad });
      const p = channel.handle!(ctx, async () => {
        ran = true;
        return {};
      });
      await expect(p).rejects.toBeInstanceOf(ProtocolError);
      await expect(p).rejects.toMatchObject({ code: JsonRpcErrorCode.InvalidParams });
      expect(ran).toBe(false);
    }
  });

  it('logging/setLevel on a modern request is -32601 (removed in 2026-07-28); the capability is declared at setup', async () => {
    const channel = logChannel();
    const { host, handlers, capabilities } = fakeHost();
    channel.setup!(host);
    expect(capabilities).toEqual([{ logging: {} }]);
    expect(() => handlers.get('logging/setLevel')!({ level: 'info' }, info('modern'))).toThrow(expect.objectContaining({ code: JsonRpcErrorCode.MethodNotFound }));
  });

  it('a modern flood: budget respected, one summary related to the request, nothing session-wide', async () => {
    const channel = logChannel({ rateLimit: { burst: 10, perSecond: 1 } });
    const { host, notified } = fakeHost();
    channel.setup!(host);
    const { ctx, sent } = modernCall(channel, host, { [LOG_LEVEL_META_KEY]: 'info' });
    const t0 = Date.now();
    await channel.handle!(ctx, async () => {
      for (let i = 0; i < 1_000; i++) ctx.log.info({ i });
      return {};
    });
    const elapsed = Date.now() - t0;
    const lines = sent.filter((n) => n.params!.logger === undefined);
    const summaries = sent.filter((n) => n.params!.logger === CHANNEL_LOGGER);
    expect(lines.length).toBeLessThanOrEqual(10 + Math.ceil(elapsed / 1000));
    expect(summaries).toHaveLength(1);
    expect(lines.length + (summaries[0]!.params!.data as { dropped: number }).dropped).toBe(1_000);
    expect(sent.at(-1)).toBe(summaries[0]);
    expect(notified).toEqual([]);
  });

  it('each modern request has its own bucket (no sessions): one request flooding does not starve another', async () => {
    const channel = logChannel({ rateLimit: { burst: 5, perSecond: 0.01 } });
    const { host } = fakeHost();
    channel.setup!(host);
    const a = modernCall(channel, host, { [LOG_LEVEL_META_KEY]: 'info' });
    const b = modernCall(channel, host, { [LOG_LEVEL_META_KEY]: 'info' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const pa = channel.handle!(a.ctx, async () => {
      for (let i = 0; i < 100; i++) a.ctx.log.info({ i });
      await gate;
      return {};
    });
    await channel.handle!(b.ctx, async () => {
      for (let i = 0; i < 3; i++) b.ctx.log.info({ i });
      return {};
    });
    release();
    await pa;
    expect(b.sent.map((n) => n.params!.data)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    expect(a.sent.filter((n) => n.params!.logger === undefined)).toHaveLength(5);
    expect(a.sent.at(-1)!.params).toEqual({ level: 'warning', logger: CHANNEL_LOGGER, data: { dropped: 95 } });
  });
});
