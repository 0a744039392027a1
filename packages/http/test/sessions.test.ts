/**
 * Sessions that end (issue 16, fault 6): the SDK 1.x client's close() sends no DELETE, so without
 * idle expiry every connect → call → close leaves a session and its calls running (a pending
 * elicitation waits up to 10 minutes). Real SDK clients over real HTTP on 127.0.0.1.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connectHttp, serveHttp } from '@mcp-tether/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
  await front?.close();
  front = undefined;
});

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
}

describe.each([
  ['SDK 1.32.2', v1Server],
  ['SDK 2.4.0', v2Server],
] as const)('idle expiry, sessions on %s', (_, factory) => {
  it('a session abandoned without DELETE is closed after sessionIdleMs and its pending elicitation aborted (disconnect)', async () => {
    front = createMcpHttp({ legacy: () => factory(), sessionIdleMs: 1_000 }); // generous: connecting takes a few requests
    const { url } = await front.listen(0);
    await abandon(url);
    expect(front.sessions()).toHaveLength(1); // still there right after close()
    await until(() => front!.sessions().length === 0, 5_000, 'expiry');
    expect(front.stats.expiredSessions).toBe(1);
    await until(() => ended.length === 1);
    expect(ended[0]).toEqual({ tool: 'ask', how: 'disconnect' });
  });

  it('a session with an open stream or recent requests is not expired', async () => {
    front = createMcpHttp({ legacy: () => factory(), sessionIdleMs: 1_000 });
    const { url } = await front.listen(0);
    const kit = await connectHttp(url); // the SDK client keeps its GET stream open
    await new Promise((r) => setTimeout(r, 2_000));
    expect(front.sessions()).toHaveLength(1);
    const r = await kit.callTool('echo', { text: 'alive' });
    expect(r.content[0]).toMatchObject({ text: expect.stringContaining('echo alive') });
    await kit.close();
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
    front = createMcpHttp({ legacy: () => v1Server(), sessionIdleMs: 2_000 }); // generous: 20 clients connect at once on a shared machine
    const { url } = await front.listen(0);
    // Warm up (modules, JIT, pools), then measure.
    for (let i = 0; i < 10; i++) await abandon(url);
    await until(() => front!.sessions().length === 0, 10_000, 'warm-up expiry');
    ended.length = 0;
    const baseHeap = await heap();
    const baseTimers = timers();

    const N = 300;
    for (let i = 0; i < N; i += 20) await Promise.all(Array.from({ length: Math.min(20, N - i) }, () => abandon(url)));
    expect(front.sessions().length).toBeGreaterThan(0);
    const peak = process.memoryUsage().heapUsed;
    await until(() => front!.sessions().length === 0, 30_000, 'expiry of all sessions');
    await until(() => ended.length === N, 10_000, 'all calls to end');
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
  }, 90_000);
});
