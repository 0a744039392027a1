/**
 * Issue 26, fair turns per client key (`fairShare`), on the wire: real SDK clients (SDK 1.x
 * 2025-era sessions, SDK 2.x pinned to 2026-07-28) on a real server on 127.0.0.1, told apart by
 * their principal (`authenticate`). Proven by the order in which the tool handler is entered, never
 * by time: the test's listener holds the POSTs of one round until all of them arrived and hands them
 * to the front in one go, in arrival order — as one poll phase of the event loop does when several
 * sockets are ready at once — so an attacker's requests and a victim's request that came after them
 * are read in the same turn of the loop.
 */
import type { Server, ServerResponse } from 'node:http';
import { tether } from '@mcp-tether/core';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createMcpHttp, type McpHttp, type McpHttpOptions } from '../src/index.js';
import { call, closeServer, H, HeldRounds, META26, modernHeaders, serveLoopback, until } from './helpers.js';

/** Tags of `enter` calls, in the order their handler was entered. */
const entries: string[] = [];
/** Run when the handler of the call with this tag is entered. */
const onEnter = new Map<string, () => void>();

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
type AnyServer = { registerTool: (...a: any[]) => unknown };
function register(server: AnyServer, shape: (s: Record<string, z.ZodTypeAny>) => unknown): void {
  server.registerTool('enter', { inputSchema: shape({ tag: z.string() }) }, async ({ tag }: { tag: string }) => {
    entries.push(tag);
    onEnter.get(tag)?.();
    return text(`entered ${tag}`);
  });
}
function v1(): McpServerV1 {
  const s = tether(new McpServerV1({ name: 'fair', version: '0.0.0' }), []);
  register(s as unknown as AnyServer, (x) => x);
  return s;
}
function v2(): McpServerV2 {
  const s = tether(new McpServerV2({ name: 'fair', version: '0.0.0' }), []);
  register(s as unknown as AnyServer, (x) => z.object(x));
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
    legacy: () => v1(),
    modern: () => v2(),
    authenticate: (req) => req.headers.get('authorization')?.replace(/^Bearer /, '') || undefined,
    ...o,
  });
  front = f;
  ({ server, url } = await serveLoopback(rounds.listener((q, s) => f.handle(q, s))));
}

afterEach(async () => {
  rounds.reset();
  entries.splice(0);
  onEnter.clear();
  for (const c of closers.splice(0)) await c().catch(() => {});
  await front?.close();
  front = undefined;
  await closeServer(server);
  server = undefined;
});

type Caller = { callTool: ClientV1['callTool'] };
const auth = (who: string) => ({ requestInit: { headers: { authorization: `Bearer ${who}` } } });

async function client25(who: string): Promise<Caller> {
  const c = new ClientV1({ name: who, version: '0' });
  const t = new TransportV1(url, auth(who));
  await c.connect(t);
  closers.push(async () => {
    await t.terminateSession().catch(() => {});
    await c.close();
  });
  return c;
}
async function client26(who: string): Promise<Caller> {
  const c = new ClientV2({ name: who, version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
  await c.connect(new TransportV2(url, auth(who)));
  closers.push(() => c.close());
  return c as unknown as Caller;
}
const enter = (c: Caller, tag: string) =>
  c.callTool({ name: 'enter', arguments: { tag } }).then((r) => (r.content as Array<{ text: string }>)[0]!.text);

/**
 * One round: the attacker sends `n` calls at once (A1…An), then — once all n reached the server —
 * the victim sends one (V); the server reads all n + 1 in one turn. Resolves with every answer.
 */
async function round(attacker: Caller, victim: Caller, n: number): Promise<string[]> {
  rounds.hold(n + 1);
  const flood = Array.from({ length: n }, (_, i) => enter(attacker, `A${i + 1}`));
  await until(() => held.length === n, 10_000, "the attacker's requests at the server");
  return Promise.all([...flood, enter(victim, 'V')]);
}
const attackerOrder = (n: number) => Array.from({ length: n }, (_, i) => `A${i + 1}`);

describe('fair turns per client key (fairShare)', () => {
  const N = 8;
  for (const [era, make] of [
    ['2025-era sessions (SDK 1.x, SSE responses)', client25],
    ['2026-07-28 requests (SDK 2.x)', client26],
  ] as const) {
    it(`${era}: a victim whose request came after the attacker's ${N} starts before the attacker's second; the attacker's run in order`, async () => {
      await start();
      const attacker = await make('mallory');
      const victim = await make('alice');
      const answers = await round(attacker, victim, N);
      expect(answers).toEqual([...attackerOrder(N), 'V'].map((t) => `entered ${t}`));
      // A1 and V start in the turn that read them; A2…A8 wait, one a turn, in order.
      expect(entries.indexOf('V')).toBeLessThan(entries.indexOf('A2'));
      expect(entries.filter((t) => t !== 'V')).toEqual(attackerOrder(N));
      expect(front!.stats.deferredRequests).toBe(N - 1);
      expect(front!.stats.queuedRequests).toBe(0);
      await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slots back');
    });
  }

  it('off (fairShare: Infinity): the same victim starts after all of the attacker’s (the control)', async () => {
    await start({ fairShare: Number.POSITIVE_INFINITY });
    const attacker = await client25('mallory');
    const victim = await client26('alice');
    await round(attacker, victim, N);
    expect(entries).toEqual([...attackerOrder(N), 'V']);
    expect(front!.stats.deferredRequests).toBe(0);
  });

  it('mixed eras, fairShare 2: two of the attacker’s start per turn, the victim (2026-07-28) in the first', async () => {
    await start({ fairShare: 2 });
    const attacker = await client25('mallory');
    const victim = await client26('alice');
    await round(attacker, victim, N);
    expect(entries.indexOf('V')).toBeLessThan(entries.indexOf('A3'));
    expect(entries.filter((t) => t !== 'V')).toEqual(attackerOrder(N));
    expect(front!.stats.deferredRequests).toBe(N - 2);
  });

  it('a lone client: its requests that arrive together run in order; sequential requests never wait', async () => {
    await start();
    const lone = await client26('alice');
    rounds.hold(N);
    const answers = await Promise.all(attackerOrder(N).map((t) => enter(lone, t)));
    expect(answers).toEqual(attackerOrder(N).map((t) => `entered ${t}`));
    expect(entries).toEqual(attackerOrder(N));
    expect(front!.stats.deferredRequests).toBe(N - 1);

    // One request at a time (each sent after the previous answer): each starts in the turn that read it.
    const session = await client25('bob');
    await until(() => front!.stats.streams === 1, 10_000, "the session's GET stream open"); // it may have waited a turn
    const before = front!.stats.deferredRequests;
    for (let i = 1; i <= 20; i++) expect(await enter(session, `S${i}`)).toBe(`entered S${i}`);
    for (let i = 1; i <= 20; i++) expect(await enter(lone, `L${i}`)).toBe(`entered L${i}`);
    expect(front!.stats.deferredRequests).toBe(before);
  });

  it('a client that disconnects while its request waits: the request is dropped unstarted, its slot given back', async () => {
    await start();
    const attacker = await client26('mallory');
    const victim = await client26('alice');
    // When A1 runs (the turn that read them all), A3 waits in the queue: its connection closes.
    onEnter.set('A1', () => held3?.destroy());
    let held3: ServerResponse | undefined;
    rounds.hold(N + 1);
    const flood = attackerOrder(N).map((t) => enter(attacker, t).catch((e: unknown) => `failed ${t}: ${String(e)}`));
    await until(() => held.length === N, 10_000, "the attacker's requests at the server");
    held3 = held[2]![1];
    const answers = await Promise.all([...flood, enter(victim, 'V')]);
    expect(answers[2]).toMatch(/^failed A3/);
    expect(entries).not.toContain('A3');
    expect(entries.filter((t) => t !== 'V')).toEqual(attackerOrder(N).filter((t) => t !== 'A3'));
    expect(entries.indexOf('V')).toBeLessThan(entries.indexOf('A2'));
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'every slot back');
    expect(front!.stats.queuedRequests).toBe(0);
    expect(await enter(attacker, 'after')).toBe('entered after');
  });

  it('shutdown while requests wait: they are answered SHUTTING_DOWN, never started; the running call finishes', async () => {
    await start();
    const attacker = await client25('mallory');
    const victim = await client25('alice');
    let shutdown: ReturnType<McpHttp['shutdown']> | undefined;
    onEnter.set('A1', () => {
      shutdown = front!.shutdown(10_000);
    });
    rounds.hold(N + 1);
    const flood = attackerOrder(N).map((t) => enter(attacker, t).catch((e: unknown) => String(e)));
    await until(() => held.length === N, 10_000, "the attacker's requests at the server");
    const answers = await Promise.all([...flood, enter(victim, 'V').catch((e: unknown) => String(e))]);
    expect(answers[0]).toBe('entered A1');
    for (const a of answers.slice(1, N)) expect(a).toMatch(/SHUTTING_DOWN|shut/i);
    // V was read in the turn of A1, before shutdown began: it started, or was answered SHUTTING_DOWN.
    expect(entries.filter((t) => t !== 'V')).toEqual(['A1']);
    expect(await shutdown).toMatchObject({ aborted: 0 });
    expect(front!.stats.queuedRequests).toBe(0);
  });

  it('front.fetch: one address’s requests wait their turn, another address is not behind them', async () => {
    await start({ authenticate: undefined }); // the client key is the address passed to fetch
    const g = front!.fetch;
    const all = [...attackerOrder(N).map((t) => ({ t, a: '192.0.2.1' })), { t: 'V', a: '192.0.2.2' }].map(({ t, a }) =>
      g(
        new Request(url, {
          method: 'POST',
          headers: { ...H, ...modernHeaders('enter') },
          body: JSON.stringify(call(t, 'enter', { tag: t }, META26)),
        }),
        { remoteAddress: a },
      ).then((r) => r.json()),
    );
    const answers = (await Promise.all(all)) as Array<{ result: { content: Array<{ text: string }> } }>;
    expect(answers.map((r) => r.result.content[0]!.text)).toEqual(
      [...attackerOrder(N), 'V'].map((t) => `entered ${t}`),
    );
    expect(entries.indexOf('V')).toBeLessThan(entries.indexOf('A2'));
    expect(entries.filter((t) => t !== 'V')).toEqual(attackerOrder(N));
  });

  it('fairShare must be a whole number ≥ 1 or Infinity', () => {
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => createMcpHttp({ modern: () => v2(), fairShare: bad })).toThrow(
        /fairShare must be a whole number ≥ 1, or Infinity \(no bound\), got/,
      );
    expect(() => createMcpHttp({ modern: () => v2(), fairShare: '2' as never })).toThrow(/got "2" \(a string\)/);
  });
});
