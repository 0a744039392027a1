/**
 * Sessions that end (issue 16, fault 6): the SDK 1.x client's close() sends no DELETE, so without
 * idle expiry every connect → call → close leaves a session and its calls running (a pending
 * elicitation waits up to 10 minutes). Real SDK clients over real HTTP on 127.0.0.1.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connectHttp, serveHttp } from '@mcp-tether/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMcpHttp, type McpHttp } from '../src/index.js';
import { ended, started, v1Server, v2Server } from './fixtures/app.js';
import { until } from './helpers.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heap = async () => {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
};
const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

let front: McpHttp | undefined;
beforeEach(() => {
  ended.length = 0;
  started.length = 0;
});
afterEach(async () => {
  vi.useRealTimers();
  await front?.close();
  front = undefined;
});

/**
 * Idle expiry on fake time: only `Date` is faked (sockets, the SDKs' timers and the front's sweep
 * run on real time), so no session can expire while a test connects, however loaded the machine;
 * `idle(ms)` then moves the clock the sweep reads.
 */
function fakeClock(): void {
  vi.useFakeTimers({ toFake: ['Date'] });
}
const idle = (ms: number) => vi.setSystemTime(Date.now() + ms);
const IDLE = 60_000;
/** Wait until the front has seen a session's streams settle at `n` (a stream's end is activity: it must come before the clock moves). */
const streamsOf = (sid: string | undefined, n: number) =>
  until(() => front!.sessions().find((s) => s.id === sid)?.streams === n, 10_000, `session streams at ${n}`);

/** Connect, leave an elicitation pending, close the client the ordinary way (no DELETE). */
async function abandon(url: URL): Promise<void> {
  const kit = await connectHttp(url, { elicit: () => new Promise(() => {}) });
  const pending = kit.callTool('ask', {}).catch(() => undefined);
  const sid = kit.transport.sessionId;
  // The elicitation is out: the call is in flight and waits for the user.
  await until(
    () => kit.elicitations.length === 1 && front!.sessions().some((s) => s.id === sid && s.inflight === 1),
    10_000,
    'the call to start',
  );
  await kit.close();
  await pending;
  await streamsOf(sid, 0);
}

describe.each([
  ['SDK 1.32.2', v1Server],
  ['SDK 2.4.0', v2Server],
] as const)('idle expiry, sessions on %s', (_, factory) => {
  it('a session abandoned without DELETE is closed after sessionIdleMs and its pending elicitation aborted (disconnect)', async () => {
    fakeClock();
    front = createMcpHttp({ legacy: () => factory(), sessionIdleMs: IDLE });
    const { url } = await front.listen(0);
    await abandon(url);
    expect(front.sessions()).toHaveLength(1); // still there right after close()
    idle(IDLE);
    await until(() => front!.sessions().length === 0, 10_000, 'expiry');
    expect(front.stats.expiredSessions).toBe(1);
    await until(() => ended.length === 1);
    expect(ended[0]).toEqual({ tool: 'ask', how: 'disconnect' });
  });

  it("an open GET stream does not keep a session; a call's open stream does, up to maxQuietStreamMs", async () => {
    fakeClock();
    front = createMcpHttp({
      legacy: () => factory(),
      sessionIdleMs: IDLE,
      maxQuietStreamMs: 10 * IDLE,
      keepAliveMs: 50,
    });
    const { url } = await front.listen(0);
    const listener = await connectHttp(url); // the SDK client keeps its GET stream open (keep-alives only)
    await streamsOf(listener.transport.sessionId, 1);
    const caller = await connectHttp(url);
    const call = caller.callTool('slow', { ms: 600_000 }).catch(() => undefined);
    await until(() => front!.stats.inflight === 1, 10_000, 'the call');
    await streamsOf(caller.transport.sessionId, 2); // its GET stream and the call's
    idle(IDLE);
    // One sweep looks at both: the listener goes, the caller stays.
    await until(() => front!.stats.expiredSessions === 1, 10_000, 'the listener to expire');
    expect(front.sessions().map((s) => s.id)).toEqual([caller.transport.sessionId]);
    idle(9 * IDLE); // the call's stream has carried nothing but keep-alives for maxQuietStreamMs
    await until(() => front!.sessions().length === 0, 10_000, 'the quiet call stream to end its session');
    await until(() => ended.length === 1);
    expect(ended[0]).toEqual({ tool: 'slow', how: 'disconnect' });
    void call;
    await listener.close();
    await caller.close();
  });

  it('requests keep a session', async () => {
    fakeClock();
    front = createMcpHttp({ legacy: () => factory(), sessionIdleMs: IDLE });
    const { url } = await front.listen(0);
    const kit = await connectHttp(url);
    const witness = await connectHttp(url);
    await streamsOf(kit.transport.sessionId, 1);
    await streamsOf(witness.transport.sessionId, 1);
    idle(IDLE / 2);
    await kit.callTool('echo', { text: 'alive' });
    await streamsOf(kit.transport.sessionId, 1); // the call's stream ended
    idle(IDLE / 2);
    await until(() => front!.stats.expiredSessions === 1, 10_000, 'the witness to expire');
    expect(front.sessions().map((s) => s.id)).toEqual([kit.transport.sessionId]);
    const r = await kit.callTool('echo', { text: 'alive' });
    expect(r.content[0]).toMatchObject({ text: expect.stringContaining('echo alive') });
    await kit.close();
    await witness.close();
  });
});

describe('the bare SDK transport (control)', () => {
  it('an abandoned session stays, and its elicitation keeps waiting', async () => {
    const bare = await serveHttp(() => v1Server());
    try {
      const kit = await connectHttp(bare.url, { elicit: () => new Promise(() => {}) });
      const pending = kit.callTool('ask', {}).catch(() => undefined);
      await until(() => kit.elicitations.length === 1);
      await kit.close();
      await pending;
      await new Promise((r) => setTimeout(r, 1_000));
      expect(bare.sessions.size).toBe(1);
      expect(ended).toHaveLength(0); // still waiting for the user, who is gone
    } finally {
      await bare.close();
    }
  });
});

describe('300 sessions opened and abandoned (SDK 1.x client close(), no DELETE)', () => {
  it('all closed after the idle time, their calls aborted, heap back to baseline, no timers left', async () => {
    fakeClock(); // no session expires before the test moves the clock, however slowly 20 clients connect at once
    // One address opens all 300: the per-client caps are raised for it — sessions (default
    // maxSessions / 10), and requests in flight (default 32): 20 clients connect at once while the
    // calls of the earlier ones wait, and their requests read in one turn wait for their turns
    // (fairShare), holding their slots meanwhile.
    front = createMcpHttp({
      legacy: () => v1Server(),
      sessionIdleMs: IDLE,
      maxSessionsPerClient: 1_000,
      maxClientRequestsInFlight: 1_000,
    });
    const { url } = await front.listen(0);
    // Warm up (modules, JIT, pools), then measure.
    for (let i = 0; i < 10; i++) await abandon(url);
    idle(IDLE);
    await until(() => front!.sessions().length === 0, 30_000, 'warm-up expiry');
    await until(() => ended.length === 10, 30_000, 'warm-up calls to end');
    ended.length = 0;
    const baseHeap = await heap();
    const baseTimers = timers();

    const N = 300;
    for (let i = 0; i < N; i += 20) await Promise.all(Array.from({ length: Math.min(20, N - i) }, () => abandon(url)));
    expect(front.sessions()).toHaveLength(N);
    const peak = process.memoryUsage().heapUsed;
    idle(IDLE);
    await until(() => front!.sessions().length === 0, 60_000, 'expiry of all sessions');
    await until(() => ended.length === N, 30_000, 'all calls to end');
    expect(ended.every((e) => e.tool === 'ask' && e.how === 'disconnect')).toBe(true);
    expect(front.stats).toMatchObject({ sessions: 0, inflight: 0, streams: 0 });
    const after = await heap();
    const grew = after - baseHeap;
    console.log(
      `300 abandoned sessions: heap base ${(baseHeap / 2 ** 20).toFixed(1)} MiB, with sessions ${(peak / 2 ** 20).toFixed(1)} MiB, after expiry ${(after / 2 ** 20).toFixed(1)} MiB; timers ${baseTimers} → ${timers()}`,
    );
    // 300 leaked sessions would be ~50 MiB (about 180 KiB each); allow noise.
    expect(grew).toBeLessThan(8 * 2 ** 20);
    expect(timers()).toBeLessThanOrEqual(baseTimers);
  }, 180_000);
});
