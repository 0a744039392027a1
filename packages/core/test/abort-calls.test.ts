// abortCalls(server, reason): every call in flight on a tethered server aborts with that reason
// (used by @mcp-tether/http's graceful shutdown), on every SDK line and era.
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { abortCalls, abortReason, ShuttingDown, type CallContext } from '../src/index.js';
import { describeEachSdk, tetheredServer, type MatrixClient, type MatrixServer } from '@mcp-tether/testing/matrix';

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close().catch(() => {});
  kit = undefined;
});

describeEachSdk('abortCalls', (sdk) => {
  it('aborts every call in flight with the reason given; no response is sent for them; the server serves the next call', async () => {
    const servers: MatrixServer[] = [];
    const kinds: string[] = [];
    let running = 0;
    kit = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, []);
      servers.push(server);
      server.registerTool('wait', { inputSchema: { n: z.number() } }, async (_: unknown, ctx: CallContext) => {
        running++;
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        kinds.push(abortReason(ctx.signal)!.kind);
        return { content: [{ type: 'text', text: 'late' }] };
      });
      server.registerTool('echo', { inputSchema: { s: z.string() } }, async ({ s }: { s: string }) => ({
        content: [{ type: 'text', text: s }],
      }));
      return server;
    });
    const calls = [kit.start('wait', { n: 1 }, { id: 'a' }), kit.start('wait', { n: 2 }, { id: 'b' })];
    const end = Date.now() + 5_000;
    while (running < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    const n = servers.reduce((sum, s) => sum + abortCalls(s, new ShuttingDown()), 0);
    expect(n).toBe(2);
    while (kinds.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    expect(kinds).toEqual(['shutdown', 'shutdown']);
    for (const c of calls) await expect(c.response(300)).rejects.toThrow();
    expect(abortCalls({}, new ShuttingDown())).toBe(0); // a server tether() never saw
    if (sdk.era === 'legacy')
      expect((await kit.callTool('echo', { s: 'next' })).content).toEqual([{ type: 'text', text: 'next' }]);
  });
});
