import type { EventStore as EventStoreV1 } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore as EventStoreV2 } from '@modelcontextprotocol/server';
import { SESSION_EVENT_BYTES } from '@mcp-tether/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEventStore } from '../src/index.js';
import { startRedis, type TestRedis } from '../src/testing.js';
import { post, readSse, spawnReplica, type Replica } from './helpers.js';

let redis: TestRedis;
const replicas: Replica[] = [];
const stores: RedisEventStore[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(replicas.splice(0).map((r) => r.kill()));
  for (const s of stores.splice(0)) await s.close();
  await redis?.stop();
});

describe('RedisEventStore', () => {
  it('is the EventStore of both SDK lines; replays in order after an id, skips priming events, scopes isolate, unknown ids reject', async () => {
    const store = new RedisEventStore({ url: redis.url, prefix: 'unit:' });
    stores.push(store);
    const v1: EventStoreV1 = store;
    const v2: EventStoreV2 = store.scoped('s');
    expect(v1 && v2).toBeTruthy();
    const a = store.scoped('session-a');
    const ids: string[] = [];
    await a.storeEvent('_GET_stream', {} as never); // priming
    for (let i = 0; i < 5; i++)
      ids.push(await a.storeEvent('_GET_stream', { jsonrpc: '2.0', method: 'notifications/message', params: { i } }));
    await a.storeEvent('other.stream', { jsonrpc: '2.0', method: 'x' });
    expect(await a.getStreamIdForEventId(ids[1]!)).toBe('_GET_stream');
    const got: Array<[string, unknown]> = [];
    const stream = await a.replayEventsAfter(ids[1]!, {
      send: async (id, m) => void got.push([id, (m.params as { i: number }).i]),
    });
    expect(stream).toBe('_GET_stream');
    expect(got).toEqual([
      [ids[2], 2],
      [ids[3], 3],
      [ids[4], 4],
    ]);
    // another scope (another session) does not know these ids
    const b = store.scoped('session-b');
    expect(await b.getStreamIdForEventId(ids[1]!)).toBeUndefined();
    await expect(b.replayEventsAfter(ids[1]!, { send: async () => {} })).rejects.toThrow(/unknown or expired/);
    await expect(a.replayEventsAfter('garbage', { send: async () => {} })).rejects.toThrow(/unknown event id/);
    expect(await a.getStreamIdForEventId('x.1-0')).toBeUndefined();
  });

  it('bounds each scope in bytes (default SESSION_EVENT_BYTES): oldest evicted first, newest replay, keys keep their TTL', async () => {
    const store = new RedisEventStore({ url: redis.url, prefix: 'bytes:' });
    stores.push(store);
    expect(store.scoped('x').maxBytesPerScope).toBe(SESSION_EVENT_BYTES);
    const scope = store.scoped('session-big');
    const other = store.scoped('session-small');
    const kept = await other.storeEvent('s', { jsonrpc: '2.0', method: 'm', params: { small: true } });
    const chunk = 'x'.repeat(64 * 1024);
    const ids: string[] = [];
    // 3 MiB in 64 KiB events, over two SSE streams of the same scope.
    for (let i = 0; i < 48; i++) {
      const stream = i % 2 === 0 ? '_GET_stream' : 'post.1';
      ids.push(
        await scope.storeEvent(stream, { jsonrpc: '2.0', method: 'notifications/message', params: { i, chunk } }),
      );
    }
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys('bytes:events:*');
      let held = 0;
      let events = 0;
      for (const key of keys) {
        expect(await client.pttl(key)).toBeGreaterThan(0); // every key expires
        if (!key.includes(Buffer.from('session-big').toString('base64url'))) continue;
        if ((await client.type(key)) !== 'stream') continue;
        for (const [, fields] of await client.xrange(key, '-', '+')) {
          held += Buffer.byteLength(fields[1]!);
          events++;
        }
      }
      expect(held).toBeLessThanOrEqual(SESSION_EVENT_BYTES);
      expect(events).toBeGreaterThanOrEqual(10); // ~15 of 64 KiB fit in 1 MiB
    } finally {
      client.disconnect();
    }
    // The oldest are gone (a replay from them rejects as for count eviction); the newest replay.
    await expect(scope.replayEventsAfter(ids[0]!, { send: async () => {} })).rejects.toThrow(/unknown or expired/);
    const got: number[] = [];
    await scope.replayEventsAfter(ids[40]!, { send: async (_id, m) => void got.push((m.params as { i: number }).i) });
    expect(got).toEqual([42, 44, 46]);
    // Another scope is not touched.
    expect(await other.getStreamIdForEventId(kept)).toBe('s');
  });

  it('trims each stream to about maxEventsPerStream and expires it ttlMs after its last event', async () => {
    const store = new RedisEventStore({ url: redis.url, prefix: 'trim:', maxEventsPerStream: 10, ttlMs: 200 });
    stores.push(store);
    let last = '';
    const earliest = await store.storeEvent('s', { jsonrpc: '2.0', method: 'm', params: { i: -1 } });
    for (let i = 0; i < 500; i++) last = await store.storeEvent('s', { jsonrpc: '2.0', method: 'm', params: { i } });
    expect(await store.getStreamIdForEventId(earliest)).toBeUndefined(); // trimmed
    let count = 0;
    const first = await store.storeEvent('s', { jsonrpc: '2.0', method: 'm' });
    await store.replayEventsAfter(last, { send: async () => void count++ });
    expect(count).toBe(1);
    expect(first).not.toBe(last);
    await new Promise((r) => setTimeout(r, 400));
    expect(await store.getStreamIdForEventId(first)).toBeUndefined();
  });

  it('Redis down: storeEvent still returns an id (the message goes out live, not resumable) and reports; replaying that id rejects', async () => {
    const errors: unknown[] = [];
    const own = await startRedis();
    const store = new RedisEventStore({ url: own.url, onError: (e) => void errors.push(e) });
    stores.push(store);
    const ok = await store.storeEvent('s', { jsonrpc: '2.0', method: 'before' });
    await own.stop();
    const lost = await store.storeEvent('s', { jsonrpc: '2.0', method: 'during' });
    expect(lost).toMatch(/\.lost-\d+$/);
    expect(errors).toHaveLength(1);
    await expect(store.replayEventsAfter(lost, { send: async () => {} })).rejects.toThrow();
    await own.restart();
    await expect(store.replayEventsAfter(ok, { send: async () => {} })).rejects.toThrow(/unknown or expired/); // a restart forgets (no persistence)
    await own.stop();
  });

  it('an SSE stream started on replica 1 (a real process) resumes with Last-Event-ID on replica 2 and gets exactly the missed events', async () => {
    const [r1, r2] = await Promise.all([
      spawnReplica('sse-replica.ts', [redis.url]),
      spawnReplica('sse-replica.ts', [redis.url]),
    ]);
    replicas.push(r1, r2);
    const url1 = `http://127.0.0.1:${r1.port}/mcp`;
    const url2 = `http://127.0.0.1:${r2.port}/mcp`;
    const init = await post(url1, {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const sid = init.headers.get('mcp-session-id')!;
    expect(sid).toBeTruthy();
    await init.text();
    const headers = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    await (await post(url1, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).text();

    const res = await post(
      url1,
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'count', arguments: { n: 6, delayMs: 60 }, _meta: { progressToken: 'p' } },
      },
      headers,
    );
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    // Read two progress events, then the client goes away.
    const seen = await readSse(res, (_e, all) => all.length === 2);
    expect(seen.map((e) => e.data.params.progress)).toEqual([1, 2]);
    const lastId = seen[1]!.id!;
    expect(lastId).toBeTruthy();

    // Resume on replica 2 (it never saw this session) until the replay holds the result.
    let replayed: Array<{ id?: string; data: any }> = [];
    for (let attempt = 0; attempt < 50; attempt++) {
      const resumed = await fetch(url2, {
        method: 'GET',
        headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastId },
      });
      expect(resumed.status).toBe(200);
      replayed = await readSse(resumed, (e) => e.data.id === 7, 1_000);
      if (replayed.some((e) => e.data.id === 7)) break;
    }
    expect(replayed.map((e) => (e.data.id === 7 ? 'result' : e.data.params.progress))).toEqual([3, 4, 5, 6, 'result']);
    expect(replayed.at(-1)!.data.result.content[0].text).toBe(`counted 6 on ${r1.child.pid}`);
    expect(new Set(replayed.map((e) => e.id)).size).toBe(5);
    expect(replayed.map((e) => e.id)).not.toContain(lastId);

    // A foreign session id cannot replay this session's events.
    const foreign = await fetch(url2, {
      method: 'GET',
      headers: { ...headers, 'mcp-session-id': 'someone-else', accept: 'text/event-stream', 'last-event-id': lastId },
    });
    expect(foreign.status).toBeGreaterThanOrEqual(400);
    await foreign.text();
  });
});
