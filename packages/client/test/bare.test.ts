/**
 * Against a bare SDK server (no tether at all, progress sent by hand the way the SDK docs show),
 * on every SDK line and era: the wrapper needs nothing from our server side.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { firstText, until } from '@mcp-tether/testing';
import { describeEachSdk, type MatrixClient } from '@mcp-tether/testing/matrix';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { tetherClient, type CallAbortedError } from '../src/index.js';

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describeEachSdk('bare SDK server', (sdk) => {
  const aborted: string[] = [];
  const factory = () => {
    const server = sdk.createServer();
    server.registerTool(
      'count',
      { inputSchema: { n: z.number(), ms: z.number() } },
      async ({ n, ms }: { n: number; ms: number }, extra: any) => {
        // v1: extra is RequestHandlerExtra; v2: a ServerContext with mcpReq.
        const token = sdk.sdk === 'v1' ? extra._meta?.progressToken : extra.mcpReq._meta?.progressToken;
        const notify = sdk.sdk === 'v1' ? extra.sendNotification : extra.mcpReq.notify;
        const signal: AbortSignal = sdk.sdk === 'v1' ? extra.signal : extra.mcpReq.signal;
        signal.addEventListener('abort', () => aborted.push(String(signal.reason?.message ?? signal.reason)), {
          once: true,
        });
        for (let i = 1; i <= n; i++) {
          await delay(ms, undefined, { signal }).catch(() => {});
          if (signal.aborted) return { content: [] };
          if (token !== undefined)
            await notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n } });
        }
        return { content: [{ type: 'text', text: `counted ${n}` }] };
      },
    );
    return server;
  };

  it('progress and result', async () => {
    kit = await sdk.connect(factory);
    const tc = tetherClient(kit.client);
    const got: number[] = [];
    const r = await tc.callTool('count', { n: 4, ms: 5 }, { onProgress: (p) => got.push(p.progress) });
    expect(firstText(r)).toBe('counted 4');
    expect(got).toEqual([1, 2, 3, 4]);
  });

  it('the watchdog cancels a call whose server went quiet; the bare server sees the abort', async () => {
    aborted.length = 0;
    kit = await sdk.connect(factory);
    const tc = tetherClient(kit.client);
    const got: number[] = [];
    const err = (await tc
      .callTool('count', { n: 3, ms: 2_000 }, { silenceMs: 100, onProgress: (p) => got.push(p.progress) })
      .catch((e) => e)) as CallAbortedError;
    expect(err.kind).toBe('silence');
    expect(got).toEqual([]);
    await until(() => aborted.length === 1, 5_000, 'the server-side abort');
    if (sdk.era === 'legacy') expect(aborted[0]).toContain('silence watchdog');
  });
});
