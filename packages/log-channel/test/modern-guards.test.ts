/**
 * The channel's own 2026-07-28 guards, driven with a hand-built CallContext and ServerHost.
 *
 * Everything observable about 2026-07-28 runs on the wire in wire.test.ts (v2-modern target and
 * serveStdio). These two guards cannot be reached there: the v2 SDK already refuses an unknown
 * `_meta` level (-32602, invalid envelope) and answers `logging/setLevel` with -32601 before any
 * handler runs. The channel keeps its own checks for adapters or SDK versions that do not, so
 * they are unit-tested here.
 */
import {
  JsonRpcErrorCode,
  ProtocolError,
  type CallContext,
  type JsonObject,
  type Notification,
  type OutboundEvent,
  type RequestInfo,
  type ServerHost,
} from '@mcp-tether/core';
import { describe, expect, it } from 'vitest';
import { LOG_LEVEL_META_KEY, LOG_LEVELS, logChannel, type LogChannel } from '../src/index.js';

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

const info = (era: 'legacy' | 'modern'): RequestInfo => ({
  requestId: 1,
  sessionId: undefined,
  era,
  meta: {},
  signal: new AbortController().signal,
  clientKey: undefined,
});

describe('2026-07-28 guards of the channel itself (hand-built context)', () => {
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
      await expect(p).rejects.toMatchObject({
        code: JsonRpcErrorCode.InvalidParams,
        data: { level: bad, expected: [...LOG_LEVELS] },
      });
      expect(ran).toBe(false);
    }
  });

  it('logging/setLevel on a modern request is -32601 (removed in 2026-07-28); on a legacy one it answers {}', async () => {
    const channel = logChannel();
    const { host, handlers, capabilities } = fakeHost();
    channel.setup!(host);
    expect(capabilities).toEqual([{ logging: {} }]);
    expect(() => handlers.get('logging/setLevel')!({ level: 'info' }, info('modern'))).toThrow(
      expect.objectContaining({ code: JsonRpcErrorCode.MethodNotFound }),
    );
    expect(await handlers.get('logging/setLevel')!({ level: 'info' }, info('legacy'))).toEqual({});
  });
});
