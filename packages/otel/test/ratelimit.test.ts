/**
 * Rate-limit refusals in the metrics: `@mcp-tether/ratelimit` publishes each refusal on core's
 * `tether:ratelimit` channel; `otel()` counts them in `tether.ratelimit.refusals` by the bucket that
 * refused. Real SDK clients and servers of every line, a real recording OpenTelemetry SDK.
 */
import { rateLimit } from '@mcp-tether/ratelimit';
import { describeEachSdk, tetheredServer, type SdkTarget } from '@mcp-tether/testing/matrix';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { otel } from '../src/index.js';
import { type OtelKit, registerSdk, sum } from './kit.js';

let kit: OtelKit;
beforeAll(() => {
  kit = registerSdk({ delta: true }); // each collect: what was recorded since the last one
});
afterAll(() => kit.shutdown());
beforeEach(() => kit.reset());

describeEachSdk('otel counts rate-limit refusals', (sdk: SdkTarget) => {
  it('each refused call adds one to tether.ratelimit.refusals with its scope, method and tool; served calls add nothing', async () => {
    await kit.collect(); // forget the other SDK lines' counts
    const mw = otel();
    // one instance across sessions: the buckets live on it; nothing refills during the test
    const limiter = rateLimit({
      perTool: { search: { burst: 2, perSecond: 0.001 } },
      perClient: { burst: 4, perSecond: 0.001 },
    });
    const errors: unknown[] = [];
    const client = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [mw, limiter], errors);
      server.registerTool('search', { inputSchema: { q: z.string() } }, async ({ q }: { q: string }) => ({
        content: [{ type: 'text', text: q }],
      }));
      server.registerTool('echo', { inputSchema: { s: z.string() } }, async ({ s }: { s: string }) => ({
        content: [{ type: 'text', text: s }],
      }));
      return server;
    });
    const codes: Array<number | 'ok'> = [];
    const call = async (name: string, args: Record<string, string>) =>
      codes.push(
        await client.callTool(name, args).then(
          () => 'ok' as const,
          (e: { code?: number }) => e.code ?? -1,
        ),
      );
    for (let i = 0; i < 3; i++) await call('search', { q: `q${i}` }); // 2 served, the third refused by the tool bucket
    for (let i = 0; i < 3; i++) await call('echo', { s: `s${i}` }); // the client bucket has 2 left: 2 served, 1 refused
    expect(codes).toEqual(['ok', 'ok', -32029, 'ok', 'ok', -32029]);

    const points = sum((await kit.collect()).get('tether.ratelimit.refusals'));
    const byScope = Object.fromEntries(
      points.map((p) => [`${p.attributes['tether.ratelimit.scope']}:${p.attributes['gen_ai.tool.name']}`, p.value]),
    );
    expect(byScope).toEqual({ 'tool:search': 1, 'client:echo': 1 });
    expect(points.every((p) => p.attributes['mcp.method.name'] === 'tools/call')).toBe(true);
    expect(points.every((p) => p.attributes['tether.client.key'] === undefined)).toBe(true);
    expect(errors).toEqual([]);
    await client.close();
    mw.dispose();
  });
});
