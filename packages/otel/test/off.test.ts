import { diagnostics } from '@mcp-tether/core';
import { describeEachSdk, tetheredServer } from '@mcp-tether/testing/matrix';
import { SpanKind } from '@opentelemetry/api';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { instrumentClient, otel } from '../src/index.js';
import { registerSdk } from './kit.js';

describeEachSdk('otel with no SDK registered', (sdk) => {
  it('declines every call, subscribes to nothing, injects nothing; an SDK registered later is picked up by the next call', async () => {
    const mw = otel();
    let asked = 0;
    const when = mw.when!.bind(mw);
    mw.when = (ctx) => {
      asked++;
      return when(ctx);
    };
    const errors: unknown[] = [];
    const client = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [mw], errors);
      server.registerTool('echo', { inputSchema: { s: z.string() } }, async ({ s }: { s: string }) => ({
        content: [{ type: 'text', text: s }],
      }));
      return server;
    });
    instrumentClient(client.client);
    await client.client.callTool({ name: 'echo', arguments: { s: 'a' } });
    expect(asked).toBe(1);
    expect(diagnostics.progress.hasSubscribers).toBe(false);
    expect(diagnostics.job.hasSubscribers).toBe(false);
    const sent = client.wire.messages.filter(
      (m) => m.direction === 'client->server' && m.message.method === 'tools/call',
    );
    expect(sent).toHaveLength(1);
    expect(sent[0]?.message.params._meta?.traceparent).toBeUndefined();

    const kit = registerSdk();
    try {
      await client.client.callTool({ name: 'echo', arguments: { s: 'b' } });
      const spans = kit.named('tools/call echo');
      expect(spans.map((s) => s.kind).sort()).toEqual([SpanKind.SERVER, SpanKind.CLIENT].sort());
      expect(diagnostics.progress.hasSubscribers).toBe(true);
    } finally {
      mw.dispose();
      await kit.shutdown();
    }
    expect(diagnostics.progress.hasSubscribers).toBe(false);
    expect(errors).toEqual([]);
    await client.close();
  });
});
