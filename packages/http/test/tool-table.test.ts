/**
 * Tools registered once (core's `toolTable`) and installed on every server the front's factories
 * build (issue 28), with real SDK clients of both lines over real HTTP: nothing of one request
 * reaches another through the shared tools (principals, a cancelled call, progress tokens, tools a
 * factory adds per request), and the shared tools cannot be changed.
 */
import { type CallContext, tether, toolTable } from '@mcp-tether/core';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createMcpHttp, type Listening, type McpHttp } from '../src/index.js';

const INFO = { name: 'table', version: '1.0.0' };
const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
/** `registerTool` of either SDK line, untyped (the schemas below are a zod object on 2.x, a raw shape on 1.x). */
type AnyServer = { registerTool(name: string, config: unknown, cb: (...a: any[]) => unknown): unknown };
const textOf = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;

/** Calls of `hold` waiting for their release, by tag; how each ended. */
const held = new Map<string, () => void>();
const ended: string[] = [];
let built = 0;

const table = toolTable((s: McpServerV1 | McpServerV2) => {
  built++;
  const v2 = s instanceof McpServerV2;
  const schema = (shape: Record<string, z.ZodType>) => (v2 ? z.object(shape) : shape);
  const server = s as unknown as AnyServer;
  server.registerTool('who', { inputSchema: schema({ tag: z.string() }) }, async ({ tag }: any, ctx: any) =>
    text(`${tag} ${(ctx as CallContext).principal ?? '-'} ${(ctx as CallContext).era}`),
  );
  // Reports one progress step with its own request's token, then waits for its release or its abort.
  server.registerTool('hold', { inputSchema: schema({ tag: z.string() }) }, async ({ tag }: any, c: any) => {
    const ctx = c as CallContext & { mcpReq?: { notify(n: unknown): Promise<void> } };
    if (ctx.progressToken !== undefined)
      await ctx.mcpReq!.notify({
        method: 'notifications/progress',
        params: { progressToken: ctx.progressToken, progress: 1, message: tag },
      });
    await new Promise<void>((resolve) => {
      held.set(tag, resolve);
      ctx.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    ended.push(`${tag} ${ctx.principal} ${ctx.signal.aborted ? 'aborted' : 'released'}`);
    return text(`${tag} released`);
  });
  for (let i = 0; i < 50; i++)
    server.registerTool(`t${i}`, { inputSchema: schema({ n: z.number() }) }, async ({ n }: any) => text(String(n)));
});

let front: McpHttp | undefined;
let at: Listening;
afterEach(async () => {
  await front?.close();
  front = undefined;
});

async function start(): Promise<Listening> {
  front = createMcpHttp({
    authenticate: (req) => req.headers.get('authorization')?.replace(/^Bearer /, '') || undefined,
    legacy: () => table.install(tether(new McpServerV1(INFO), [])),
    modern: (info) => {
      const server = table.install(tether(new McpServerV2(INFO), []));
      // A tool of one principal's requests only: registered per request, on top of the table.
      if (info.principal?.clientId === 'alice')
        server.registerTool('alice.only', { inputSchema: z.object({}) }, async () => text('alice'));
      return server;
    },
  });
  at = await front.listen(0);
  return at;
}

const auth = (who: string) => ({ requestInit: { headers: { authorization: `Bearer ${who}` } } });
async function modern(who: string) {
  const client = new ClientV2({ name: who, version: '0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  await client.connect(new TransportV2(at.url, auth(who)));
  return client;
}
async function legacy(who: string) {
  const client = new Client({ name: who, version: '0' });
  await client.connect(new StreamableHTTPClientTransport(at.url, auth(who)));
  return client;
}

async function until(pred: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 10_000;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a tool table behind the front', () => {
  it('both eras list and call the shared tools; each request sees its own principal and its own extra tools', async () => {
    await start();
    const alice = await modern('alice');
    const bob = await modern('bob');
    const carol = await legacy('carol');
    try {
      const names = async (c: { listTools(): Promise<{ tools: Array<{ name: string }> }> }) =>
        (await c.listTools()).tools.map((t) => t.name);
      const aliceTools = await names(alice);
      expect(aliceTools).toHaveLength(53);
      expect(aliceTools).toContain('alice.only');
      const bobTools = await names(bob);
      expect(bobTools).toHaveLength(52);
      expect(bobTools).not.toContain('alice.only');
      expect(await names(carol)).toHaveLength(52);
      // Concurrent calls of one shared tool, three principals, both eras.
      const r = await Promise.all([
        ...[1, 2, 3].map((i) => alice.callTool({ name: 'who', arguments: { tag: `a${i}` } })),
        ...[1, 2, 3].map((i) => bob.callTool({ name: 'who', arguments: { tag: `b${i}` } })),
        carol.callTool({ name: 'who', arguments: { tag: 'c' } }),
      ]);
      expect(r.map(textOf)).toEqual([
        'a1 alice modern',
        'a2 alice modern',
        'a3 alice modern',
        'b1 bob modern',
        'b2 bob modern',
        'b3 bob modern',
        'c carol legacy',
      ]);
      // alice's extra tool, per request, never into the table: bob still cannot call it.
      expect(textOf(await alice.callTool({ name: 'alice.only', arguments: {} }))).toBe('alice');
      expect(textOf(await alice.callTool({ name: 'alice.only', arguments: {} }))).toBe('alice');
      const refused = await bob.callTool({ name: 'alice.only', arguments: {} }).catch((e: Error) => e);
      expect(String((refused as { message?: string }).message ?? JSON.stringify(refused))).toMatch(/alice\.only/);
      // Input is still validated per request against the shared schema.
      const bad = await bob.callTool({ name: 't3', arguments: { n: 'x' } });
      expect(bad.isError).toBe(true);
      expect(textOf(await bob.callTool({ name: 't3', arguments: { n: 7 } }))).toBe('7');
      // Built once per SDK line, not per request or session.
      expect(built).toBe(2);
    } finally {
      await Promise.all([alice.close(), bob.close(), carol.close()]);
    }
  });

  it("a cancelled call of a shared tool stops that call alone; progress goes to its own request's token", async () => {
    await start();
    const alice = await modern('alice');
    const bob = await modern('bob');
    try {
      const progress: Record<string, string[]> = { alice: [], bob: [] };
      const stop = new AbortController();
      const a = alice
        .callTool(
          { name: 'hold', arguments: { tag: 'x' } },
          { signal: stop.signal, onprogress: (p: { message?: string }) => void progress.alice!.push(p.message!) },
        )
        .catch((e: unknown) => e);
      const b = bob.callTool(
        { name: 'hold', arguments: { tag: 'y' } },
        { onprogress: (p: { message?: string }) => void progress.bob!.push(p.message!) },
      );
      await until(() => held.has('x') && held.has('y'), 'both calls to wait');
      stop.abort('enough');
      await until(() => ended.includes('x alice aborted'), "alice's call to abort");
      expect(ended).not.toContain('y bob aborted');
      held.get('y')!();
      expect(textOf(await b)).toBe('y released');
      await a;
      expect(ended).toEqual(['x alice aborted', 'y bob released']);
      expect(progress.bob).toEqual(['y']);
      expect(progress.alice!.every((m) => m === 'x')).toBe(true);
    } finally {
      await Promise.all([alice.close(), bob.close()]);
    }
  });
});

describe('toolTable', () => {
  it('the shared tools are frozen; a server adds its own tools to a copy (SDK 1.x and 2.x)', () => {
    for (const Server of [McpServerV1, McpServerV2]) {
      const schema = Server === McpServerV2 ? z.object({}) : {};
      const t = toolTable((s: AnyServer) => void s.registerTool('shared', { inputSchema: schema }, () => text('s')));
      const one = t.install(tether(new Server(INFO), [])) as unknown as AnyServer;
      const registry = (one as unknown as { _registeredTools: Record<string, { update(u: unknown): void }> })
        ._registeredTools;
      expect(() => registry.shared!.update({ title: 'changed' })).toThrow(TypeError);
      expect(() => one.registerTool('shared', { inputSchema: schema }, () => text('again'))).toThrow(
        /already registered/,
      );
      one.registerTool('mine', { inputSchema: schema }, () => text('m'));
      const two = t.install(new Server(INFO)) as unknown as { _registeredTools: Record<string, unknown> };
      expect(Object.keys(two._registeredTools)).toEqual(['shared']);
      // tether() after install(): the server's own tools are still wrapped (each one, not only the first).
      const four = tether(t.install(new Server(INFO)), []) as unknown as AnyServer;
      four.registerTool('a', { inputSchema: schema }, () => text('a'));
      four.registerTool('b', { inputSchema: schema }, () => text('b'));
      const mark = Symbol.for('mcp-tether.instrumented-tool');
      const own = (four as unknown as { _registeredTools: Record<string, Record<symbol, unknown>> })._registeredTools;
      expect([own.a?.[mark], own.b?.[mark], own.shared?.[mark]]).toEqual([true, true, true]);
      // A server that registered a tool of the table's before install is refused.
      const three = new Server(INFO) as unknown as AnyServer;
      three.registerTool('shared', { inputSchema: schema }, () => text('x'));
      expect(() => t.install(three)).toThrow(/already registered/);
    }
  });

  it('shares tools only: a register() that adds a prompt or a resource is refused', () => {
    const t = toolTable((s: McpServerV2) => void s.registerPrompt('p', {}, () => ({ messages: [] })));
    expect(() => t.install(new McpServerV2(INFO))).toThrow(/shares tools only/);
  });
});
