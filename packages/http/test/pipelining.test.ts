/**
 * HTTP/1.1 pipelining and hostile bodies on the wire (newcomer findings, issue 26): a client that
 * writes several requests on one connection and hangs up before they are answered gives back every
 * slot, and a body nested megabytes deep is refused before it is parsed.
 */
import { connect as netConnect } from 'node:net';
import type { Server } from 'node:http';
import { tether } from '@mcp-tether/core';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createMcpHttp, type McpHttp } from '../src/index.js';
import { call, closeServer, H, META26, modernHeaders, post, serveLoopback, until } from './helpers.js';

let front: McpHttp | undefined;
let server: Server | undefined;
let url: URL;
/** Calls of `hold` entered and not yet released. */
let entered = 0;
const releases: Array<() => void> = [];

async function start(fairShare?: number): Promise<McpHttp> {
  const f = createMcpHttp({
    modern: () => {
      const s = tether(new McpServerV2({ name: 'pipe', version: '0.0.0' }), []);
      s.registerTool('hold', { inputSchema: z.object({}) }, async (_args: unknown, ctx: any) => {
        entered++;
        await new Promise<void>((resolve) => {
          releases.push(resolve);
          ctx.mcpReq?.signal?.addEventListener('abort', () => resolve(), { once: true });
        });
        return { content: [{ type: 'text' as const, text: 'held' }] };
      });
      return s;
    },
    ...(fairShare !== undefined && { fairShare }),
  });
  front = f;
  ({ server, url } = await serveLoopback((req, res) => f.handle(req, res)));
  return f;
}

afterEach(async () => {
  for (const r of releases.splice(0)) r();
  entered = 0;
  await front?.close();
  await closeServer(server);
  front = undefined;
  server = undefined;
});

/** `n` 2026-07-28 calls of `hold` written back to back on one connection, as pipelining clients do. */
function pipelined(n: number): string {
  let out = '';
  for (let i = 1; i <= n; i++) {
    const body = JSON.stringify(call(i, 'hold', {}, META26));
    const headers: Record<string, string | number> = {
      host: url.host,
      ...H,
      ...modernHeaders('hold'),
      'content-length': Buffer.byteLength(body),
    };
    out += `POST ${url.pathname} HTTP/1.1\r\n`;
    for (const [k, v] of Object.entries(headers)) out += `${k}: ${v}\r\n`;
    out += `\r\n${body}`;
  }
  return out;
}

describe('pipelined requests on a connection that hangs up', () => {
  for (const [label, fairShare] of [
    ['fair turns on', undefined],
    ['fair turns off', Number.POSITIVE_INFINITY],
  ] as const) {
    it(`every slot comes back and nothing waits on (${label})`, async () => {
      const f = await start(fairShare);
      const socket = netConnect(Number(url.port), '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.on('error', () => {});
      socket.write(pipelined(10));
      // the front has read them all (each holds a slot) and the first call is running
      // (without fair turns all ten run at once; with them, one a turn)
      const running = fairShare === undefined ? 1 : 10;
      await until(() => f.stats.requestsInFlight === 10 && entered >= running, 30_000, 'ten requests in flight');
      socket.destroy();
      // Node emits 'close' only on the response the socket was writing: the nine behind it get theirs
      // from the socket (they held their slots for good before)
      await until(() => f.stats.requestsInFlight === 0, 30_000, 'every slot given back');
      expect(f.stats.queuedRequests).toBe(0);
      // with fair turns, one started per turn until the hang-up and the rest were dropped unstarted;
      // without, all ten started at once (and were aborted)
      if (fairShare === undefined) expect(entered).toBeLessThan(10);
      // the same address is served as before: its slots are all free
      const r = await post(url, call(11, 'missing', {}, META26), modernHeaders('missing'));
      expect(r.status).toBe(200);
      await r.text();
    }, 60_000);
  }
});

describe('a body nested megabytes deep', () => {
  it('is refused by the depth scan before any parse: -32600 (a parse first answered -32700 after seconds)', async () => {
    await start();
    const r = await post(url, '['.repeat(4_000_000), modernHeaders('hold'));
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ id: null, error: { code: -32600, data: { maxJsonDepth: 1000 } } });
  }, 60_000);

  it('keeps the id of a single message (read without parsing the rest)', async () => {
    await start();
    const deep = `${'{"a":'.repeat(200_000)}1${'}'.repeat(200_000)}`;
    const body = `{"jsonrpc":"2.0","id":"deep \\"one\\"","method":"tools/call","params":{"_meta":${JSON.stringify(META26)},"name":"hold","arguments":{"v":${deep}}}}`;
    const r = await post(url, body, modernHeaders('hold'));
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ id: 'deep "one"', error: { code: -32600 } });
    const late = `{"jsonrpc":"2.0","method":"tools/call","params":{"v":${deep}},"id":42}`;
    const r2 = await post(url, late, modernHeaders('hold'));
    expect(await r2.json()).toMatchObject({ id: 42, error: { code: -32600 } });
  }, 60_000);
});
