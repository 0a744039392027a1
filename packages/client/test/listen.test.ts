/**
 * 2026-07-28 has no resources/subscribe: partial output by subscription goes over a
 * `subscriptions/listen` stream (SDK 2.x `client.listen`, resourceSubscriptions: [partialUri]),
 * against the real @mcp-tether/jobs announcing updates through createMcpHandler's notifier.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { cancel } from '@mcp-tether/cancel';
import { handler, progressEvent, tether } from '@mcp-tether/core';
import { firstText } from '@mcp-tether/testing';
import { jobs } from '@mcp-tether/jobs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { tetherClient } from '../src/index.js';

it('2026-07-28: callJob partial: "subscribe" listens for the partial resource and reads on each update', async () => {
  let mcp!: ReturnType<typeof createMcpHandler>;
  const j = jobs({
    tools: ['corpus.reindex'],
    inlineMs: 50,
    notifyIntervalMs: 20,
    notifyResourceUpdated: (uri: string) => mcp.notify.resourceUpdated(uri),
  });
  const c = cancel();
  mcp = createMcpHandler(
    () => {
      const server = tether(new McpServer({ name: 'listen', version: '0.0.0' }), [c, j]);
      j.registerTools(server as never);
      server.registerTool(
        'corpus.reindex',
        { inputSchema: z.object({ files: z.number().int() }) },
        handler(async function* (args: { files: number }, ctx) {
          for (let done = 1; done <= args.files; done++) {
            await delay(30, undefined, { signal: ctx.signal });
            await ctx.job?.append(`doc-${done}.md\n`);
            yield progressEvent(done, args.files);
          }
          return { content: [{ type: 'text' as const, text: `indexed ${args.files} files` }] };
        }) as never,
      );
      return server as never;
    },
    { onerror: () => {} } as never,
  );
  const client = new Client({ name: 'listen-client', version: '0.0.0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  const auth = { authInfo: { token: 't', clientId: 'alice', scopes: [] } };
  const messages: Array<Record<string, any>> = [];
  const fetchFn: typeof fetch = (input, init) => {
    if (typeof init?.body === 'string') messages.push(JSON.parse(init.body));
    return mcp.fetch(new Request(input as string | URL, init), auth as never);
  };
  await client.connect(new StreamableHTTPClientTransport(new URL('http://127.0.0.1:1/mcp'), { fetch: fetchFn }));
  try {
    const tc = tetherClient(client as never);
    const chunks: string[] = [];
    const r = await tc.callJob(
      'corpus.reindex',
      { files: 25 },
      { partial: 'subscribe', onPartial: (t) => chunks.push(t) },
    );
    expect(firstText(r)).toBe('indexed 25 files');
    expect(chunks.join('')).toBe(Array.from({ length: 25 }, (_, i) => `doc-${i + 1}.md\n`).join(''));
    expect(chunks.length).toBeGreaterThan(2); // read on updates from the listen stream, not only at the end
    const listen = messages.find((m) => m.method === 'subscriptions/listen');
    expect(listen?.params?.notifications?.resourceSubscriptions?.[0]).toMatch(/^job:\/\/[\w-]+\/partial$/);
    expect(messages.some((m) => m.method === 'resources/subscribe')).toBe(false);
  } finally {
    await client.close();
    await mcp.close();
    await j.engine.close(1_000);
  }
});
