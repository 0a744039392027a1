/**
 * Refusals take fair turns too (issue 26 follow-up): a client at `maxClientRequestsInFlight` has
 * its 429 `client-requests` answered one per turn of its share, in the FIFO of its requests, at most
 * `maxClientRequestsInFlight` waiting at once. On the wire, real server on 127.0.0.1; order, never
 * time: as in `fair.test.ts`, the listener holds POSTs until a round of them arrived and hands them
 * to the front in one go (one poll phase), and the moment each 429 is written (`res.end`) is logged
 * beside the moment the victim's tool handler is entered.
 */
import type { Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { tether } from '@mcp-tether/core';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createMcpHttp, type McpHttp, type McpHttpOptions } from '../src/index.js';
import { call, closeServer, H, HeldRounds, META26, modernHeaders, serveLoopback, until } from './helpers.js';

/** What happened, in order: `V` when the victim's handler is entered, `R<n>` when refusal n is written. */
const log: string[] = [];
/** Run when this tag is logged. */
const onLog = new Map<string, () => void>();
const note = (tag: string) => {
  log.push(tag);
  onLog.get(tag)?.();
};
/** The Node response of each tagged request. */
const responses = new Map<string, ServerResponse>();
/** Release every blocked call. */
let unblock: () => void = () => {};
let gate = new Promise<void>((r) => (unblock = r));

function v2(): McpServerV2 {
  const s = tether(new McpServerV2({ name: 'refusals', version: '0.0.0' }), []);
  const reg = s as unknown as { registerTool: (...a: unknown[]) => unknown };
  reg.registerTool('enter', { inputSchema: z.object({ tag: z.string() }) }, async ({ tag }: { tag: string }) => {
    note(tag);
    return { content: [{ type: 'text' as const, text: `entered ${tag}` }] };
  });
  reg.registerTool('block', { inputSchema: z.object({}) }, async () => {
    await gate;
    return { content: [{ type: 'text' as const, text: 'unblocked' }] };
  });
  return s;
}

let front: McpHttp | undefined;
let server: Server | undefined;
let url: URL;
const closers: Array<() => Promise<unknown>> = [];
/** POSTs held back until a round of them arrived (see the file's header). */
const rounds = new HeldRounds();
const held = rounds.held;

async function start(o: Partial<McpHttpOptions> = {}): Promise<void> {
  const f = createMcpHttp({
    modern: () => v2(),
    authenticate: (req) => req.headers.get('authorization')?.replace(/^Bearer /, '') || undefined,
    ...o,
  });
  front = f;
  const pass = rounds.listener((q, s) => f.handle(q, s));
  ({ server, url } = await serveLoopback((req, res) => {
    const tag = req.headers['x-tag'];
    if (typeof tag === 'string') {
      responses.set(tag, res);
      const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
      res.end = ((...a: unknown[]) => {
        note(tag);
        return end(...a);
      }) as ServerResponse['end'];
    }
    pass(req, res);
  }));
}

afterEach(async () => {
  unblock();
  gate = new Promise<void>((r) => (unblock = r));
  rounds.reset();
  log.splice(0);
  onLog.clear();
  responses.clear();
  for (const c of closers.splice(0)) await c().catch(() => {});
  await front?.close();
  front = undefined;
  await closeServer(server);
  server = undefined;
});

const modernPost = (who: string, id: string, name: string, args: Record<string, unknown>, extra = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { ...H, ...modernHeaders(name), authorization: `Bearer ${who}`, ...extra },
    body: JSON.stringify(call(id, name, args, META26)),
  });

/** `n` calls of mallory's that block until `unblock()`: mallory is then at its bound when n is it. */
async function fill(n: number): Promise<Array<Promise<string>>> {
  // Answered once unblocked; a test that ends first leaves them to afterEach (cut, and that is fine).
  const blocked = Array.from({ length: n }, (_, i) =>
    modernPost('mallory', `b${i}`, 'block', {}).then(
      (r) => r.text(),
      (e: unknown) => `cut: ${String(e)}`,
    ),
  );
  await until(() => front!.stats.requestsInFlight === n, 10_000, "mallory's blocked calls in flight");
  return blocked;
}

/** A refused request of mallory's, tagged `R<i>` in the log when its 429 is written. */
const refused = (i: number) =>
  modernPost('mallory', `r${i}`, 'enter', { tag: `never R${i}` }, { 'x-tag': `R${i}` }).then(async (r) => ({
    status: r.status,
    retryAfter: r.headers.get('retry-after'),
    body: (await r.json()) as { id: unknown; error: { data: { code: string; reason: string } } },
  }));

async function victim(): Promise<{ callTool: ClientV2['callTool'] }> {
  const c = new ClientV2({ name: 'alice', version: '0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  await c.connect(new TransportV2(url, { requestInit: { headers: { authorization: 'Bearer alice' } } }));
  closers.push(() => c.close());
  return c;
}
const enter = (c: { callTool: ClientV2['callTool'] }, tag: string) =>
  c.callTool({ name: 'enter', arguments: { tag } }).then((r) => (r.content as Array<{ text: string }>)[0]!.text);

const Rs = (n: number) => Array.from({ length: n }, (_, i) => `R${i + 1}`);

describe('refusals take fair turns (fairShare, maxClientRequestsInFlight)', () => {
  const N = 6;

  it('a flooder at its bound: each 429 is still BUSY client-requests with Retry-After; one is written per turn, the victim between the first and the second', async () => {
    await start({ maxClientRequestsInFlight: N });
    const alice = await victim();
    const blocked = await fill(N);
    rounds.hold(N + 1);
    const flood = Array.from({ length: N }, (_, i) => refused(i + 1));
    await until(() => held.length === N, 10_000, "mallory's refused requests at the server");
    const v = enter(alice, 'V');
    const answers = await Promise.all(flood);
    expect(await v).toBe('entered V');
    for (const a of answers) {
      expect(a.status).toBe(429);
      expect(a.retryAfter).toBe('1');
      expect(a.body.id).toBeNull();
      expect(a.body.error.data).toMatchObject({ code: 'BUSY', reason: 'client-requests' });
    }
    // R1 is written in the turn that read them all, R2…R6 one a turn after; V started in the first.
    expect(log.filter((t) => t !== 'V')).toEqual(Rs(N));
    expect(log.indexOf('V')).toBeLessThan(log.indexOf('R2'));
    expect(front!.stats.refusedRequests).toBe(N);
    expect(front!.stats.deferredRefusals).toBe(N - 1);
    expect(front!.stats.queuedRefusals).toBe(0);
    expect(front!.stats.requestsInFlight).toBe(N); // waiting refusals held no slot
    unblock();
    await Promise.all(blocked);
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slots back');
  });

  it('off (fairShare: Infinity): every 429 is written at once, the victim after them (the control)', async () => {
    await start({ maxClientRequestsInFlight: N, fairShare: Number.POSITIVE_INFINITY });
    const alice = await victim();
    await fill(N);
    rounds.hold(N + 1);
    const flood = Array.from({ length: N }, (_, i) => refused(i + 1));
    await until(() => held.length === N, 10_000, "mallory's refused requests at the server");
    const v = enter(alice, 'V');
    for (const a of await Promise.all(flood)) expect(a.status).toBe(429);
    expect(await v).toBe('entered V');
    expect(log).toEqual([...Rs(N), 'V']);
    expect(front!.stats.deferredRefusals).toBe(0);
  });

  it('a client that hangs up while its refusal waits: nothing is written, nothing is left behind', async () => {
    await start({ maxClientRequestsInFlight: N });
    const blocked = await fill(N);
    rounds.hold(N);
    // R1 is written in the turn that read them all, R2 on the next: then R3, waiting, hangs up.
    onLog.set('R2', () => responses.get('R3')!.destroy());
    const flood = Array.from({ length: N }, (_, i) => refused(i + 1).catch((e: unknown) => `failed: ${String(e)}`));
    const answers = await Promise.all(flood);
    expect(answers[2]).toMatch(/^failed/);
    expect(log).toEqual(Rs(N).filter((t) => t !== 'R3'));
    for (const [i, a] of answers.entries()) if (i !== 2) expect(a).toMatchObject({ status: 429 });
    expect(front!.stats.deferredRefusals).toBe(N - 1);
    await until(() => front!.stats.queuedRefusals === 0, 10_000, 'no refusal waiting');
    expect(front!.stats.requestsInFlight).toBe(N);
    unblock();
    await Promise.all(blocked);
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slots back');
  });

  it('pipelined requests on one connection: at most maxClientRequestsInFlight refusals wait, the rest are answered at once', async () => {
    const max = 2;
    const M = 10;
    await start({ maxClientRequestsInFlight: max });
    const blocked = await fill(max);
    const body = JSON.stringify(call('p', 'enter', { tag: 'never' }, META26));
    const one = [
      `POST ${url.pathname} HTTP/1.1`,
      `host: ${url.host}`,
      'content-type: application/json',
      'accept: application/json, text/event-stream',
      'authorization: Bearer mallory',
      ...Object.entries(modernHeaders('enter')).map(([k, v]) => `${k}: ${v}`),
      `content-length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ].join('\r\n');
    const socket = connect(Number(url.port), '127.0.0.1');
    let got = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (got += d));
    socket.write(one.repeat(M)); // one write: Node emits a 'request' for each, in one callback
    const count = () => got.split('HTTP/1.1 429 ').length - 1;
    await until(() => count() === M, 10_000, 'every pipelined request answered');
    socket.destroy();
    expect(got.split('"reason":"client-requests"').length - 1).toBe(M);
    expect(front!.stats.refusedRequests).toBe(M);
    expect(front!.stats.deferredRefusals).toBe(max);
    expect(front!.stats.queuedRefusals).toBe(0);
    unblock();
    await Promise.all(blocked);
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slots back');
  });

  it('front.fetch: refusals wait their turn too (at most the bound), an aborted one gets nothing, nothing is left', async () => {
    const max = 3;
    await start({ authenticate: undefined, maxClientRequestsInFlight: max }); // the client key is the address
    const g = front!.fetch;
    const req = (id: string, name: string, signal?: AbortSignal) =>
      new Request(url, {
        method: 'POST',
        headers: { ...H, ...modernHeaders(name) },
        body: JSON.stringify(call(id, name, name === 'enter' ? { tag: id } : {}, META26)),
        ...(signal && { signal }),
      });
    const blocked = Array.from({ length: max }, (_, i) =>
      g(req(`b${i}`, 'block'), { remoteAddress: '192.0.2.1' }).then((r) => r.text()),
    );
    await until(() => front!.stats.requestsInFlight === max, 10_000, 'the blocked calls in flight');
    const abort = new AbortController();
    let queuedAtV = -1;
    onLog.set('V', () => {
      queuedAtV = front!.stats.queuedRefusals; // V started in the turn that read them all
      abort.abort();
    });
    // R1 now, R2…R4 wait (the bound: 3), R5 and R6 at once; R3's client goes away while it waits.
    const flood = ['R1', 'R2', 'R3', 'R4', 'R5', 'R6'].map((id) =>
      g(req(id, 'enter', id === 'R3' ? abort.signal : undefined), { remoteAddress: '192.0.2.1' }),
    );
    const v = g(req('V', 'enter'), { remoteAddress: '192.0.2.2' });
    const answers = await Promise.all(flood);
    expect(answers.map((r) => r.status)).toEqual([429, 429, 499, 429, 429, 429]);
    const busy = (await answers[0]!.json()) as { error: { data: { code: string; reason: string } } };
    expect(busy.error.data).toMatchObject({ code: 'BUSY', reason: 'client-requests' });
    expect(answers[0]!.headers.get('retry-after')).toBe('1');
    expect((await v).status).toBe(200);
    expect(queuedAtV).toBe(max);
    expect(front!.stats.deferredRefusals).toBe(max);
    expect(front!.stats.queuedRefusals).toBe(0);
    expect(front!.stats.refusedRequests).toBe(6);
    unblock();
    await Promise.all(blocked);
    expect(front!.stats.requestsInFlight).toBe(0);
  });
});
