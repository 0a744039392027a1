/**
 * What the preset adds over the packages: results shaped from strings and objects, `ctx.ask`,
 * lock keys from validated arguments, `app.use`, and the refusals at registration. A real SDK 1.x
 * client in memory against `app.createServer('v1')` (what each 2025-era session gets).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { type App, ask, createApp, sleep, toResult } from '../src/index.js';
import { textOf } from './helpers.js';

let app: App | undefined;
afterEach(() => app?.shutdown(100));

async function connect(a: App, answers: Array<Record<string, unknown>> = []) {
  await a.start();
  const server = a.createServer('v1') as { connect(t: unknown): Promise<void> };
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 't', version: '0' }, { capabilities: { elicitation: { form: {} } } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (r) => {
    asked.push(r.params.message);
    return (answers.shift() ?? { action: 'decline' }) as never;
  });
  await client.connect(ct);
  const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args });
  return { client, call, asked };
}

describe('results', () => {
  it('toResult: strings, objects, arrays, numbers, nothing; results and input_required pass through', () => {
    expect(toResult('hi')).toEqual({ content: [{ type: 'text', text: 'hi' }] });
    expect(toResult({ n: 1 })).toEqual({ content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } });
    expect(toResult([1, 2])).toEqual({ content: [{ type: 'text', text: '[1,2]' }] });
    expect(toResult(3)).toEqual({ content: [{ type: 'text', text: '3' }] });
    expect(toResult(null)).toEqual({ content: [{ type: 'text', text: 'null' }] });
    expect(toResult(undefined)).toEqual({ content: [] });
    const full = { content: [{ type: 'text', text: 'x' }], isError: true };
    expect(toResult(full)).toBe(full);
    const asking = { resultType: 'input_required', inputRequests: {} };
    expect(toResult(asking)).toBe(asking);
  });

  it('a handler returning an object, a generator returning a string, a throw', async () => {
    app = createApp({ log: false, handleSignals: false, redisUrl: false })
      .tool('obj', { inputSchema: { a: z.number() } }, ({ a }) => ({ doubled: a * 2 }))
      .tool('gen', async function* () {
        yield 1;
        return 'done';
      })
      .tool('boom', () => {
        throw new Error('broken');
      });
    const { call } = await connect(app);
    expect((await call('obj', { a: 2 })).structuredContent).toEqual({ doubled: 4 });
    expect(textOf(await call('gen'))).toBe('done');
    const boom = await call('boom');
    expect(boom.isError).toBe(true);
    expect(textOf(boom)).toContain('broken');
    expect(textOf(await call('obj', { a: 1 }))).toBe('{"doubled":2}'); // the server goes on
  });
});

describe('ctx.ask and ctx.confirm', () => {
  it('asks one question after another, keyed by position; decline gives undefined', async () => {
    app = createApp({ log: false, handleSignals: false, redisUrl: false }).tool('order', async (_args, ctx) => {
      const size = ctx.ask('Which size?', { size: ask.enum(['S', 'M', 'L']) });
      if (!size) return 'no order';
      const ok = ctx.confirm(`Order size ${size.size}?`);
      return ok ? `ordered ${size.size}` : 'cancelled';
    });
    const { call, asked } = await connect(app, [
      { action: 'accept', content: { size: 'M' } },
      { action: 'accept', content: { confirm: true } },
      { action: 'decline' },
    ]);
    expect(textOf(await call('order'))).toBe('ordered M');
    expect(asked).toEqual(['Which size?', 'Order size M?']);
    expect(textOf(await call('order'))).toBe('no order');
  });
});

describe('locks', () => {
  it('a lock function of the validated arguments: same id serialized, other ids in parallel', async () => {
    const inside = new Map<string, number>();
    let overlap = false;
    let parallel = false;
    app = createApp({ log: false, handleSignals: false, redisUrl: false }).tool(
      'doc.write',
      { inputSchema: { id: z.string() }, lock: ({ id }) => `doc:${id}` },
      async ({ id }, ctx) => {
        inside.set(id, (inside.get(id) ?? 0) + 1);
        if (inside.get(id)! > 1) overlap = true;
        if ([...inside.values()].filter((n) => n > 0).length > 1) parallel = true;
        await sleep(30, ctx.signal);
        inside.set(id, inside.get(id)! - 1);
        return id;
      },
    );
    const { call } = await connect(app);
    await Promise.all([call('doc.write', { id: 'a' }), call('doc.write', { id: 'a' }), call('doc.write', { id: 'b' })]);
    expect(overlap).toBe(false);
    expect(parallel).toBe(true);
    expect(app.stack!.locks.stats().keys['doc:a']?.acquired).toBe(2);
    // bad arguments: the SDK's invalid-params result, and no lock taken for them
    const bad = await call('doc.write', { id: 42 });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/-32602|validation/i);
    expect(app.stack!.locks.stats().acquired).toBe(3);
  });

  it('a tool without lock takes none, destructiveHint or not', async () => {
    app = createApp({ log: false, handleSignals: false, redisUrl: false }).tool(
      'wipe',
      { annotations: { destructiveHint: true } },
      () => 'wiped',
    );
    const { call } = await connect(app);
    await call('wipe');
    expect(app.stack!.locks.stats().acquired).toBe(0);
  });
});

describe('app.use', () => {
  it('runs once per call (not per question round), inside cancel and outside the lock', async () => {
    const seen: string[] = [];
    app = createApp({ log: false, handleSignals: false, redisUrl: false })
      .use(async (ctx, next) => {
        seen.push(`${ctx.name} signal:${ctx.signal instanceof AbortSignal}`);
        return next();
      })
      .tool('ask', (_a, ctx) => (ctx.confirm('Sure?') ? 'yes' : 'no'));
    const { call } = await connect(app, [{ action: 'accept', content: { confirm: true } }]);
    expect(textOf(await call('ask'))).toBe('yes');
    expect(seen).toEqual(['ask signal:true']);
  });
});

describe('refusals', () => {
  const fresh = () => createApp({ log: false, handleSignals: false, redisUrl: false });
  it('bad names, taken names, a lock on a read-only tool, a job with outputSchema, bad options', () => {
    expect(() => fresh().tool('has space', () => '')).toThrow(TypeError);
    expect(() => fresh().tool('jobs.status', () => '')).toThrow(/already registered/);
    expect(() =>
      fresh()
        .tool('a', () => '')
        .tool('a', () => ''),
    ).toThrow(/already registered/);
    expect(() => fresh().tool('r', { lock: 'x', annotations: { readOnlyHint: true } }, () => '')).toThrow(
      /readOnlyHint/,
    );
    expect(() => fresh().tool('j', { job: true, outputSchema: { n: z.number() } }, () => '')).toThrow(/outputSchema/);
    expect(() => fresh().tool('s', { inputSchema: { n: 5 as never } }, () => '')).toThrow(/not a zod schema/);
    expect(() => createApp({ timeoutMs: -1 })).toThrow(TypeError);
    expect(() => fresh().use(42 as never)).toThrow(TypeError);
  });
  it('tool() and use() after start', async () => {
    app = fresh();
    await app.start();
    expect(() => app!.tool('late', () => '')).toThrow(/before the app starts/);
    expect(() => app!.use(async (_c, next) => next())).toThrow(/before the app starts/);
  });
});
