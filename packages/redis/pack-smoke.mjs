// Installed from the packed tarball into an empty project (scripts/pack-check.mjs): a real
// redis-server (started by the package's own test helper), real locks, events and replays.
import { RedisEventStore, RedisLockStore, RedisReplayStore } from '@mcp-tether/redis';
import { startRedis } from '@mcp-tether/redis/testing';

const redis = await startRedis();
try {
  const a = new RedisLockStore({ url: redis.url });
  const b = new RedisLockStore({ url: redis.url });
  const never = new AbortController().signal;
  const first = await a.acquire('smoke', { max: 1, maxQueue: 10, signal: never });
  let second;
  const waiting = b.acquire('smoke', { max: 1, maxQueue: 10, signal: never }).then((g) => (second = g));
  await new Promise((r) => setTimeout(r, 50));
  const queuedWhileHeld = second === undefined;
  await first();
  await waiting;
  await second();
  const eventStore = new RedisEventStore({ url: redis.url });
  const events = eventStore.scoped('session');
  const id1 = await events.storeEvent('s', { jsonrpc: '2.0', method: 'one' });
  await events.storeEvent('s', { jsonrpc: '2.0', method: 'two' });
  const replayed = [];
  await events.replayEventsAfter(id1, { send: async (_id, m) => void replayed.push(m.method) });
  const replays = new RedisReplayStore({ url: redis.url });
  const once = await replays.consume('state', Date.now() + 10_000);
  const twice = await replays.consume('state', Date.now() + 10_000);
  await Promise.all([a.close(), b.close(), replays.close(), eventStore.close()]);
  const ok = queuedWhileHeld && second.fencingToken > first.fencingToken && replayed.join() === 'two' && once && !twice;
  console.log(ok ? 'ok' : `FAILED ${JSON.stringify({ queuedWhileHeld, replayed, once, twice })}`);
  process.exitCode = ok ? 0 : 1;
} finally {
  await redis.stop();
}
