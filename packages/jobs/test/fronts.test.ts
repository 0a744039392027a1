/**
 * `jobs({ tools, fronts: [taskFront(...)] })` with both applying to one tool, on the wire (every SDK
 * line and era): a call that becomes a task (2025 `params.task`, 2026 a request that declares the
 * tasks extension) never goes through handle mode too — the task's result is the tool's result,
 * not a job handle, however long the task runs past `inlineMs`; every other call of the tool gets
 * handle mode.
 */
import { handler, progressEvent, type CallContext } from '@mcp-tether/core';
import { ask, mrtr, readInput, requireInput } from '@mcp-tether/mrtr';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer, type MatrixClient, type SdkTarget } from '@mcp-tether/testing/matrix';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { JobEngine, MemoryJobStore, jobs, taskFront, TASKS_EXTENSION, type JobsMiddleware } from '../src/index.js';
import { handleOf } from './fixtures.js';

let ids = 0;
async function rpc(
  kit: MatrixClient,
  method: string,
  params: Record<string, unknown> = {},
  timeoutMs = 10_000,
): Promise<Record<string, any>> {
  const id = `fr-${++ids}`;
  const response = kit.wire.waitFor(
    (m) => m.direction === 'server->client' && m.message.id === id && m.message.method === undefined,
    timeoutMs,
  );
  void kit.sendRaw({ jsonrpc: '2.0', id, method, params }).catch(() => {});
  return (await response).message;
}

const INLINE_MS = 30;

interface Fixture {
  engine: JobEngine;
  work: JobsMiddleware;
  errors: unknown[];
  started: string[];
  release: () => void;
  factory: () => any;
}

function fixture(sdk: SdkTarget): Fixture {
  const engine = new JobEngine({ store: new MemoryJobStore({ sweepIntervalMs: 20 }), progressWriteMs: 0 });
  const work = jobs({
    engine,
    tools: ['corpus.reindex'],
    inlineMs: INLINE_MS,
    fronts: [taskFront({ engine, taskSupport: { 'corpus.reindex': 'optional' }, pollIntervalMs: 100 })],
  });
  const errors: unknown[] = [];
  const started: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const factory = () => {
    const { server } = tetheredServer(sdk, [work], errors);
    work.registerTools(server as never);
    server.registerTool(
      'corpus.reindex',
      { inputSchema: { files: z.number().int() } },
      handler(async function* ({ files }: { files: number }, ctx: CallContext) {
        started.push(`${ctx.job?.mode ?? 'none'}:${ctx.job?.id ?? '-'}`);
        yield progressEvent(1, files + 1, 'waiting for the gate');
        // Held well past inlineMs: a handle-mode job inside the task would have answered with a handle by now.
        await Promise.race([
          gate,
          new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
          ),
        ]);
        await ctx.job?.append('doc-1.md\n');
        return { content: [{ type: 'text' as const, text: `indexed ${files} files` }] };
      }) as never,
    );
    return server;
  };
  return { engine, work, errors, started, release, factory };
}

let open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.reverse()) await close().catch(() => {});
  open = [];
});

const terminal = (s: unknown) => s === 'completed' || s === 'failed' || s === 'cancelled';

describeEachSdk('jobs: tools + task front on one tool', (sdk) => {
  it('a call that becomes a task runs as that task only: its result is the tool result, not a job handle', async () => {
    const fx = fixture(sdk);
    open.push(() => fx.engine.close(1_000));
    const kit = await sdk.connect(
      fx.factory,
      (sdk.era === 'modern' ? { capabilities: { extensions: { [TASKS_EXTENSION]: {} } } } : {}) as never,
    );
    open.push(() => kit.close());
    const params: Record<string, unknown> = { name: 'corpus.reindex', arguments: { files: 3 } };
    if (sdk.era === 'legacy') params.task = { ttl: 60_000 };
    const created = await rpc(kit, 'tools/call', params);
    expect(created.error).toBeUndefined();
    const taskId: string = sdk.era === 'legacy' ? created.result.task.taskId : created.result.taskId;
    expect(typeof taskId).toBe('string');
    // Far past inlineMs, then let the tool finish.
    await new Promise((r) => setTimeout(r, INLINE_MS * 15));
    fx.release();
    let task: Record<string, any> = {};
    for (let i = 0; i < 200 && !terminal(task.status); i++) {
      const got = await rpc(kit, 'tasks/get', { taskId });
      expect(got.error).toBeUndefined();
      task = got.result;
      if (!terminal(task.status)) await new Promise((r) => setTimeout(r, 20));
    }
    expect(task.status).toBe('completed');
    const result = sdk.era === 'legacy' ? (await rpc(kit, 'tasks/result', { taskId })).result : task.result;
    expect(result.content).toEqual([{ type: 'text', text: 'indexed 3 files' }]);
    expect(result.structuredContent).toBeUndefined(); // no JobHandle
    // The handler ran once, as the task's job (not as a second, handle-mode job).
    expect(fx.started).toEqual([`${sdk.era === 'legacy' ? 'task-2025' : 'task-2026'}:${taskId}`]);
    expect(fx.errors).toEqual([]);
  });

  it.skipIf(sdk.era !== 'modern')(
    "2026: a tasks/get that carries a progress token gets the task's progress on it, before the DetailedTask",
    async () => {
      const fx = fixture(sdk);
      open.push(() => fx.engine.close(1_000));
      const kit = await sdk.connect(fx.factory, { capabilities: { extensions: { [TASKS_EXTENSION]: {} } } } as never);
      open.push(() => kit.close());
      const created = await rpc(kit, 'tools/call', { name: 'corpus.reindex', arguments: { files: 3 } });
      const taskId: string = created.result.taskId;
      let token = '';
      let got: Record<string, any> = {};
      // The handler reports 1/4 at once, then holds: poll until the store has it (bounded).
      for (let i = 0; i < 200 && kit.wire.progress(token).length === 0; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 20));
        token = `get-${i}`;
        got = await rpc(kit, 'tasks/get', { taskId, _meta: { progressToken: token } });
        expect(got.result.status).toBe('working');
      }
      const reports = kit.wire.progress(token);
      expect(reports).toHaveLength(1);
      expect(reports[0]).toMatchObject({ progress: 1, total: 4, message: 'waiting for the gate' });
      expect(reports[0]!.seq).toBeLessThan(kit.wire.responseTo(got.id)!.seq);
      fx.release();
    },
  );

  it('the same tool called without a task (2025: no params.task; 2026: no tasks extension) gets handle mode', async () => {
    const fx = fixture(sdk);
    open.push(() => fx.engine.close(1_000));
    const kit = await sdk.connect(fx.factory, {} as never);
    open.push(() => kit.close());
    const first = await kit.callTool('corpus.reindex', { files: 2 });
    const h = handleOf(first);
    expect(h.status).toBe('working');
    expect(h.jobId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    fx.release();
    let r = first;
    for (let i = 0; i < 20 && !terminal(handleOf(r).status); i++)
      r = await kit.callTool('jobs.status', { jobId: h.jobId, waitMs: 2_000 });
    expect(handleOf(r).status).toBe('completed');
    expect(firstText(r)).toBe('indexed 2 files');
    expect(fx.started).toEqual([`handle:${h.jobId}`]);
    expect(fx.errors).toEqual([]);
  });
});

// Issue 26, fault 1: a task whose handler needs the user's input, started by a client that declared
// no elicitation, was asked anyway (2025: elicitation/create on tasks/result, re-sent after every
// -32601; 2026: the form handed out on tasks/get) and waited in input_required until its TTL.
describeEachSdk('jobs: a task needing input the client did not declare (issue 26, fault 1)', (sdk) => {
  const confirmTool = (server: any, ran: string[]) =>
    server.registerTool(
      'reset',
      { inputSchema: {} },
      handler(async () => {
        ran.push('reset');
        const sure = readInput('sure');
        if (sure === undefined) return requireInput.elicit('Reset the counter?', { sure: ask.boolean('Sure?') });
        return { content: [{ type: 'text' as const, text: 'reset' }] };
      }) as never,
    );

  it('ends at once with the plain call refusal (2025: ELICITATION_UNSUPPORTED on tasks/result; 2026: -32021 on tasks/get); nothing is asked', async () => {
    const engine = new JobEngine({ store: new MemoryJobStore({ sweepIntervalMs: 20 }), progressWriteMs: 0 });
    open.push(() => engine.close(1_000));
    const work = jobs({
      engine,
      tools: ['reset'],
      inlineMs: INLINE_MS,
      fronts: [taskFront({ engine, taskSupport: { reset: 'optional' }, pollIntervalMs: 100 })],
    });
    const ran: string[] = [];
    const errors: unknown[] = [];
    const kit = await sdk.connect(
      () => {
        const { server } = tetheredServer(sdk, [work], errors);
        work.registerTools(server as never);
        confirmTool(server, ran);
        return server;
      },
      // no elicitation capability declared (the modern client declares the tasks extension only)
      (sdk.era === 'modern' ? { capabilities: { extensions: { [TASKS_EXTENSION]: {} } } } : {}) as never,
    );
    open.push(() => kit.close());
    // the bare control: the same tool, plain call, mrtr only
    const control = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [mrtr()]);
      confirmTool(server, []);
      return server;
    });
    open.push(() => control.close());
    const plain = await rpc(control, 'tools/call', { name: 'reset', arguments: {} });

    const params: Record<string, unknown> = { name: 'reset', arguments: {} };
    if (sdk.era === 'legacy') params.task = { ttl: 600_000 };
    const created = await rpc(kit, 'tools/call', params);
    const taskId: string = sdk.era === 'legacy' ? created.result.task.taskId : created.result.taskId;
    let task: Record<string, any> = {};
    for (let i = 0; i < 500 && !terminal(task.status); i++) {
      task = (await rpc(kit, 'tasks/get', { taskId })).result;
      expect(task.status).not.toBe('input_required');
      if (!terminal(task.status)) await new Promise((r) => setTimeout(r, 20));
    }
    if (sdk.era === 'legacy') {
      const result = (await rpc(kit, 'tasks/result', { taskId })).result;
      expect(plain.result.structuredContent.code).toBe('ELICITATION_UNSUPPORTED');
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toEqual(plain.result.structuredContent);
      expect(result.content).toEqual(plain.result.content);
    } else {
      expect(plain.error).toMatchObject({
        code: -32021,
        data: { requiredCapabilities: { elicitation: { form: {} } } },
      });
      expect(task.status).toBe('failed');
      expect(task.error).toEqual(plain.error);
      expect(JSON.stringify(task)).not.toMatch(/inputRequests/);
    }
    // nothing was ever asked of the client
    expect(kit.wire.fromServer().filter((m) => m.message.method === 'elicitation/create')).toEqual([]);
    expect(ran).toEqual(['reset']);
    expect(errors).toEqual([]);
  });
});
