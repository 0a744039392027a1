/**
 * Issue 16, faults 1 and 2 on the wire (raw fetch over real HTTP on 127.0.0.1), on 2025-era
 * sessions served by SDK 1.32.2 and SDK 2.4.0 servers, with the bare SDK transport as the control.
 */
import { connectHttp, serveHttp } from '@mcp-tether/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMcpHttp, type Listening, type McpHttp } from '../src/index.js';
import { ended, v1Server, v2Server } from './fixtures/app.js';
import { call, post, rawSession, read, until } from './helpers.js';

let front: McpHttp | undefined;
let at: Listening;
beforeEach(() => {
  ended.length = 0;
});
afterEach(async () => {
  await front?.close();
  front = undefined;
});

describe.each([
  ['SDK 1.32.2', v1Server],
  ['SDK 2.4.0', v2Server],
] as const)('2025-era sessions on %s', (_, factory) => {
  it('fault 1: a second request reusing an id in flight is refused on its own response; the first call is unaffected', async () => {
    front = createMcpHttp({ legacy: () => factory() });
    at = await front.listen(0);
    const h = await rawSession(at.url);
    const first = read(await post(at.url, call('dup', 'slow', { ms: 1_000 }), h));
    await until(() => front!.stats.inflight === 1);
    const second = await post(at.url, call('dup', 'echo', { text: 'intruder' }), h);
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({ jsonrpc: '2.0', id: 'dup', error: { code: -32600 } });
    // The first caller gets its own result, on its own stream.
    const r = await first.response('dup');
    expect(r.result.content[0].text).toBe('slept 1000');
    await first.done;
    expect(first.messages.filter((m) => m.id === 'dup')).toHaveLength(1);
    expect(front.stats.duplicateIds).toBe(1);
    // Once answered, the id is free again.
    const again = read(await post(at.url, call('dup', 'echo', { text: 'later' }), h));
    expect((await again.response('dup')).result.content[0].text).toContain('echo later');
    // Same id twice in one batch (2025-03-26 batches): refused too.
    const batch = await post(at.url, [call('b', 'echo'), call('b', 'echo')], h);
    expect(batch.status).toBe(409);
  });

  it("fault 2: after notifications/cancelled the call's SSE stream ends at once; timers and mappings are freed; a resume of it gets 405", async () => {
    front = createMcpHttp({ legacy: () => factory(), keepAliveMs: 50 });
    at = await front.listen(0);
    const h = await rawSession(at.url);
    const stream = read(await post(at.url, call(5, 'slow', { ms: 60_000 }), h));
    await until(() => front!.stats.inflight === 1);
    await until(() => stream.raw.some((t) => t.includes('keepalive')), 5_000, 'a keep-alive');
    const transport = (front.sessions()[0]!.server as any).server.transport;
    expect(transport._streamMapping.size).toBe(1);
    const t0 = Date.now();
    const c = await post(
      at.url,
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'stop' } },
      h,
    );
    expect(c.status).toBe(202);
    await stream.done;
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(stream.messages.filter((m) => m.id === 5)).toHaveLength(0); // no response after a cancel
    await until(() => ended.length === 1);
    expect(ended[0]).toEqual({ tool: 'slow', how: 'cancelled' });
    expect(transport._streamMapping.size).toBe(0);
    expect(transport._requestToStreamMapping.size).toBe(0);
    expect(front.stats).toMatchObject({ inflight: 0, cancelledStreams: 1, streams: 0 });
    // The priming event's id resumes nothing: 405 (SDK clients stop there instead of retrying).
    const primingId = /id: (\S+)/.exec(stream.raw.join(''))![1]!;
    const resume = await fetch(at.url, { headers: { accept: 'text/event-stream', 'last-event-id': primingId, ...h } });
    expect(resume.status).toBe(405);
    // The session goes on.
    const next = read(await post(at.url, call(6, 'echo', { text: 'after' }), h));
    expect((await next.response(6)).result.content[0].text).toContain('echo after');
  });
});

describe('fault 2 with a real SDK 1.x client', () => {
  it("a call cancelled through the client's AbortSignal: its stream ends, the client's resume gets 405 and stops, nothing stays open", async () => {
    front = createMcpHttp({ legacy: () => v1Server(), keepAliveMs: 50, retryIntervalMs: 50 });
    at = await front.listen(0);
    const kit = await connectHttp(at.url);
    const abort = new AbortController();
    const call = kit.callTool('slow', { ms: 60_000 }, { signal: abort.signal }).catch((e: Error) => e);
    await until(() => front!.stats.inflight === 1);
    abort.abort('user pressed stop');
    expect(await call).toBeInstanceOf(Error);
    await until(() => ended.length === 1);
    expect(ended[0]).toEqual({ tool: 'slow', how: 'cancelled' });
    // The SDK client resumes the ended stream (it had a priming event id): 405, and it stops there.
    await new Promise((r) => setTimeout(r, 500));
    expect(front.stats.cancelledStreams).toBe(1);
    // Only the client's standalone GET stream is open; no POST stream, no resume stream.
    expect(front.sessions()[0]!.streams).toBe(1);
    const transport = (front.sessions()[0]!.server as any).server.transport;
    expect([...transport._streamMapping.keys()]).toEqual(['_GET_stream']);
    expect(kit.clientErrors.filter((e) => !/405|cancel|abort/i.test(String(e)))).toEqual([]);
    expect((await kit.callTool('echo', { text: 'next' })).content[0]).toMatchObject({
      text: expect.stringContaining('echo next'),
    });
    await kit.close();
  });
});

describe('the bare SDK transport (control: the faults are real)', () => {
  it('fault 1 on SDK 1.32.2 alone: the first caller gets nothing (its result has nowhere to go)', async () => {
    const bare = await serveHttp(() => v1Server());
    try {
      const h = await rawSession(bare.url);
      const first = read(await post(bare.url, call('dup', 'slow', { ms: 300 }), h));
      await new Promise((r) => setTimeout(r, 50));
      const second = read(await post(bare.url, call('dup', 'echo', { text: 'intruder' }), h));
      const r = await second.response('dup');
      await second.done;
      await new Promise((z) => setTimeout(z, 400));
      // The slow call finished 300 ms in, but its caller never hears of it: its stream stays open, empty.
      expect(r.result.content[0].text).toContain('echo intruder');
      expect(first.messages.filter((m) => m.id === 'dup')).toHaveLength(0);
      expect(first.ended).toBe(false);
    } finally {
      await bare.close();
    }
  });

  it("fault 2 on SDK 1.32.2 alone: the cancelled call's stream stays open, keep-alives keep coming", async () => {
    const bare = await serveHttp(() => v1Server(), { keepAliveMs: 50 });
    try {
      const h = await rawSession(bare.url);
      const stream = read(await post(bare.url, call(5, 'slow', { ms: 60_000 }), h));
      await new Promise((r) => setTimeout(r, 100));
      await post(bare.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } }, h);
      const before = stream.raw.length;
      await new Promise((r) => setTimeout(r, 400));
      expect(stream.ended).toBe(false);
      expect(stream.raw.length).toBeGreaterThan(before);
    } finally {
      await bare.close();
    }
  });
});
