/**
 * Over real Streamable HTTP on 127.0.0.1 (a tethered SDK 1.x server in stateful sessions, the
 * SDK 1.x client transport): progress on the call's SSE stream, and the watchdog's cancel POSTed
 * as notifications/cancelled, which aborts the handler on the server (a dropped stream would not:
 * on 2025-era HTTP a disconnect is not a cancel).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { cancel } from '@mcp-tether/cancel';
import { handler, tether } from '@mcp-tether/core';
import { firstText, serveHttp, until, type HttpHarness } from '@mcp-tether/testing';
import { heartbeat } from '@mcp-tether/heartbeat';
import { progress, progressMiddleware } from '@mcp-tether/progress';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { connect, tetherClient, type CallAbortedError } from '../src/index.js';

let http: HttpHarness | undefined;
let client: Client | undefined;
afterEach(async () => {
  await client?.close();
  await http?.close();
  client = http = undefined;
});

async function setup(aborts: string[]) {
  const middlewares = [cancel(), heartbeat({ silenceMs: 60_000 }), progressMiddleware({ minIntervalMs: 0 })];
  http = await serveHttp(() => {
    const server = tether(new McpServer({ name: 'http', version: '1' }), middlewares);
    server.registerTool(
      'steps',
      { inputSchema: { n: z.number() } },
      handler(async function* ({ n }: { n: number }, ctx) {
        for (let i = 1; i <= n; i++) {
          await delay(5, undefined, { signal: ctx.signal });
          yield progress({ progress: i, total: n });
        }
        return { content: [{ type: 'text' as const, text: `did ${n}` }] };
      }),
    );
    server.registerTool(
      'stuck',
      { inputSchema: {} },
      handler(async (_args: object, ctx) => {
        ctx.onAbort((reason) => aborts.push((reason as Error).message));
        await delay(30_000, undefined, { signal: ctx.signal });
        return { content: [] };
      }),
    );
    return server;
  });
  client = new Client({ name: 'c', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(http.url));
  return tetherClient(client);
}

it('progress rides the SSE stream of the call, the last one before the result', async () => {
  const tc = await setup([]);
  const got: number[] = [];
  const r = await tc.callTool('steps', { n: 20 }, { onProgress: (p) => got.push(p.progress) });
  expect(firstText(r)).toBe('did 20');
  expect(got.at(-1)).toBe(20);
  expect(got).toEqual([...got].sort((a, b) => a - b));
});

it('the silence watchdog POSTs notifications/cancelled and the server aborts the handler with that reason', async () => {
  const aborts: string[] = [];
  const tc = await setup(aborts);
  const err = (await tc.callTool('stuck', {}, { silenceMs: 200 }).catch((e) => e)) as CallAbortedError;
  expect(err.kind).toBe('silence');
  await until(() => aborts.length === 1, 5_000, 'the server-side abort');
  expect(aborts[0]).toMatch(
    /^cancelled by client: stuck: no progress and no result for \d+ ms \(silence watchdog, silenceMs 200\)/,
  );
  // The session goes on.
  expect(firstText(await tc.callTool('steps', { n: 2 }))).toBe('did 2');
});

it('connect(url).close() ends its 2025-era session on the server (a DELETE): connect/close cycles leave none behind', async () => {
  await setup([]);
  const before = http!.sessions.size; // setup's own client
  for (let i = 0; i < 3; i++) {
    const c = await connect(http!.url);
    expect(firstText(await c.callTool('steps', { n: 1 }))).toBe('did 1');
    expect(http!.sessions.size).toBe(before + 1);
    await c.close();
    expect(http!.sessions.size).toBe(before);
  }
});
