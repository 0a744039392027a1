/**
 * The call timers under fake time, on the wire (every SDK line and era, a bare SDK server whose
 * tool reports progress only when the test says so): the silence watchdog fires exactly
 * `silenceMs` after the last sign of life and not a millisecond before, progress pushes it back,
 * the resetting timeout and the total cap keep their own clocks.
 */
import { describeEachSdk, type MatrixClient } from '@mcp-tether/testing/matrix';
import { afterEach, expect, it, vi } from 'vitest';
import { tetherClient, type CallAbortedError } from '../src/index.js';

let kit: MatrixClient | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await kit?.close();
  kit = undefined;
});

describeEachSdk('call timers (fake time)', (sdk) => {
  /** A tool that sends one progress notification each time `beat()` is called, and never returns. */
  function setup() {
    const beats: Array<() => Promise<void>> = [];
    const factory = () => {
      const server = sdk.createServer();
      server.registerTool('wait', { inputSchema: {} }, async (_args: object, extra: any) => {
        const token = sdk.sdk === 'v1' ? extra._meta?.progressToken : extra.mcpReq._meta?.progressToken;
        const notify = sdk.sdk === 'v1' ? extra.sendNotification : extra.mcpReq.notify;
        const signal: AbortSignal = sdk.sdk === 'v1' ? extra.signal : extra.mcpReq.signal;
        let n = 0;
        beats.push(() => notify({ method: 'notifications/progress', params: { progressToken: token, progress: ++n } }));
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        return { content: [] };
      });
      return server;
    };
    return { beats, factory };
  }

  const settled = (p: Promise<unknown>) => {
    const state = { done: false, error: undefined as CallAbortedError | undefined };
    p.then(
      () => {
        state.done = true;
      },
      (e) => {
        state.done = true;
        state.error = e;
      },
    );
    return state;
  };

  it('silence: fires at exactly silenceMs (default 30 000) after the last progress, and progress pushes it back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { beats, factory } = setup();
    kit = await sdk.connect(factory);
    const tc = tetherClient(kit.client);
    const call = settled(tc.callTool('wait', {}));
    await vi.advanceTimersByTimeAsync(20_000);
    expect(call.done).toBe(false);
    await beats[0]!(); // a sign of life at 20 s: the watchdog now fires at 50 s
    await vi.advanceTimersByTimeAsync(29_999);
    expect(call.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.done).toBe(true);
    expect(call.error?.kind).toBe('silence');
    expect(call.error?.elapsedMs).toBe(50_000);
    expect(call.error?.lastProgress).toEqual({ progress: 1 });
  });

  it('timeout without reset keeps its own clock; the total cap fires whatever progress comes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { beats, factory } = setup();
    kit = await sdk.connect(factory);
    const tc = tetherClient(kit.client, { silenceMs: 0 });
    const a = settled(tc.callTool('wait', {}, { timeoutMs: 10_000, resetTimeoutOnProgress: false }));
    const b = settled(tc.callTool('wait', {}, { timeoutMs: 0, maxTotalMs: 25_000 }));
    for (let t = 0; t < 24; t++) {
      await vi.advanceTimersByTimeAsync(1_000);
      for (const beat of beats) await beat().catch(() => {});
      if (t === 8) expect(a.done).toBe(false);
    }
    expect(a.error?.kind).toBe('timeout');
    expect(a.error?.elapsedMs).toBe(10_000);
    expect(b.done).toBe(false); // 24 s, progress every second
    await vi.advanceTimersByTimeAsync(1_000);
    expect(b.error?.kind).toBe('total');
    expect(b.error?.elapsedMs).toBe(25_000);
  });

  it('the resetting timeout (default 60 000) fires 60 s after the last progress when the watchdog is off', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { beats, factory } = setup();
    kit = await sdk.connect(factory);
    const tc = tetherClient(kit.client, { silenceMs: 0 });
    const call = settled(tc.callTool('wait', {}));
    await vi.advanceTimersByTimeAsync(45_000);
    await beats[0]!();
    await vi.advanceTimersByTimeAsync(59_999);
    expect(call.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.error?.kind).toBe('timeout');
    expect(call.error?.elapsedMs).toBe(105_000);
  });
});
