/**
 * MCP tasks on the wire, real SDK clients and servers (core test kit):
 * - 2025-11-25 tasks (`params.task`) on SDK 1.x and on SDK 2.x's 2025-era sessions;
 * - the 2026-07-28 tasks extension on SDK 2.x (`createMcpHandler`, one server per request).
 */
import { handler, progressEvent, ProtocolError, type CallContext } from '@mcp-tether/core';
import { describeEachSdk, tetheredServer, type MatrixClient, type SdkTarget } from '@mcp-tether/testing/matrix';
import { until } from '@mcp-tether/testing';
import { ask, mrtr, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { JobEngine } from '../src/engine.js';
import { MemoryJobStore } from '../src/memory.js';
import { taskFront, TASKS_EXTENSION, RELATED_TASK_META_KEY } from '../src/tasks/index.js';

const OPT_IN = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } } };
const NO_EXT = { 'io.modelcontextprotocol/clientCapabilities': {} };

let ids = 0;
/** One raw JSON-RPC request through the kit (recorded on the wire); resolves with the response message. */
async function rpc(
  kit: MatrixClient,
  method: string,
  params: Record<string, unknown> = {},
  timeoutMs = 8_000,
): Promise<Record<string, any>> {
  const id = `rpc-${++ids}`;
  const response = kit.wire.waitFor(
    (m) => m.direction === 'server->client' && m.message.id === id && m.message.method === undefined,
    timeoutMs,
  );
  void kit.sendRaw({ jsonrpc: '2.0', id, method, params }).catch(() => {});
  return (await response).message;
}

/** Poll tasks/get until `done(result)` (or throw after ~8 s). */
async function pollUntil(
  kit: MatrixClient,
  taskId: string,
  done: (r: Record<string, any>) => boolean,
  meta?: Record<string, unknown>,
): Promise<Record<string, any>> {
  const t0 = Date.now();
  for (;;) {
    const res = await rpc(kit, 'tasks/get', meta ? { taskId, _meta: meta } : { taskId });
    if (res.error) throw new Error(`tasks/get failed: ${JSON.stringify(res.error)}`);
    if (done(res.result)) return res.result;
    if (Date.now() - t0 > 8_000) throw new Error(`task ${taskId} never got there; last ${JSON.stringify(res.result)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const terminal = (r: Record<string, any>) => ['completed', 'failed', 'cancelled'].includes(r.status);

interface Fixture {
  kit: MatrixClient;
  errors: unknown[];
  finallies: string[];
  release: () => void;
  engine: JobEngine;
}

/** The test tools, on a fresh server per call of the factory (v2-modern builds one per request). */
function serverFor(
  sdk: SdkTarget,
  front: ReturnType<typeof taskFront>,
  errors: unknown[],
  finallies: string[],
  gate: { wait: Promise<void> },
) {
  // A protocol fault of the chain (not of the tool: McpServer turns a tool's throw into an isError result).
  const faulty = {
    name: 'faulty',
    when: (ctx: CallContext) => ctx.name === 'boom',
    handle: async () => {
      throw new ProtocolError(-32603, 'the backend is down');
    },
  };
  const { server } = tetheredServer(sdk, [front, faulty], errors);
  server.registerTool(
    'slow',
    { inputSchema: { steps: z.number() } },
    handler(async function* ({ steps }: { steps: number }) {
      for (let i = 1; i <= steps; i++) {
        await new Promise((r) => setTimeout(r, 15));
        yield progressEvent(i, steps, `step ${i} of ${steps}`);
      }
      return { content: [{ type: 'text' as const, text: `did ${steps} steps` }] };
    }),
  );
  server.registerTool(
    'wait',
    {},
    handler(async (ctx: CallContext) => {
      try {
        await Promise.race([
          gate.wait,
          new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
          ),
        ]);
        return { content: [{ type: 'text' as const, text: 'released' }] };
      } finally {
        finallies.push('wait');
      }
    }),
  );
  const approval = { name: ask.string('Your name') };
  server.registerTool(
    'ask',
    {},
    handler(async () => {
      const answer = readInputResult(approval);
      if (!answer) return requireInput.elicit('Who is asking?', approval);
      if (answer.action !== 'accept')
        return { content: [{ type: 'text' as const, text: `no answer (${answer.action})` }] };
      return { content: [{ type: 'text' as const, text: `hello ${answer.content.name}` }] };
    }),
  );
  server.registerTool('oops', {}, async () => ({
    content: [{ type: 'text' as const, text: 'tool failed' }],
    isError: true,
  }));
  server.registerTool('boom', {}, async () => ({ content: [{ type: 'text' as const, text: 'never' }] }));
  server.registerTool('needs', {}, async () => ({ content: [{ type: 'text' as const, text: 'ran' }] }));
  server.registerTool('plain', {}, async () => ({ content: [{ type: 'text' as const, text: 'plain' }] }));
  return server;
}

const SUPPORT = {
  slow: 'optional',
  wait: 'optional',
  ask: 'optional',
  oops: 'optional',
  boom: 'optional',
  needs: 'required',
} as const;

async function setup(
  sdk: SdkTarget,
  opts: { ttlMs?: number; maxLive?: number; connect?: Record<string, unknown> } = {},
): Promise<Fixture> {
  const engine = new JobEngine({
    store: new MemoryJobStore({ sweepIntervalMs: 20 }),
    progressWriteMs: 0,
    onError: (e) => engineErrors.push(e),
    ...(opts.maxLive !== undefined && { maxLivePerOwner: opts.maxLive }),
  });
  const front = taskFront({
    engine,
    taskSupport: SUPPORT,
    pollIntervalMs: 250,
    ...(opts.ttlMs !== undefined && { ttlMs: opts.ttlMs }),
  });
  const errors: unknown[] = [];
  const finallies: string[] = [];
  let release!: () => void;
  const gate = { wait: new Promise<void>((r) => (release = r)) };
  const kit = await sdk.connect(() => serverFor(sdk, front, errors, finallies, gate) as never, {
    // a client that answers forms declares form elicitation (a task never asks one that does not)
    capabilities:
      sdk.era === 'modern'
        ? { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } }
        : { elicitation: { form: {} } },
    elicit: [{ action: 'accept', content: { name: 'Ada' } }],
    ...opts.connect,
  } as never);
  return { kit, errors, finallies, release, engine };
}

/** Start a task the era's way: 2025 `params.task`, 2026 the extension (the modern kit declares it on every request). */
async function startTask(
  sdk: SdkTarget,
  kit: MatrixClient,
  name: string,
  args: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<Record<string, any>> {
  const params: Record<string, unknown> = { name, arguments: args, ...extra };
  if (sdk.era === 'legacy') params.task = { ttl: 60_000 };
  return rpc(kit, 'tools/call', params);
}

const taskIdOf = (sdk: SdkTarget, res: Record<string, any>): string =>
  sdk.era === 'legacy' ? res.result.task.taskId : res.result.taskId;

let fx: Fixture | undefined;
const engineErrors: unknown[] = [];
afterEach(async () => {
  fx?.release();
  await fx?.kit.close();
  fx = undefined;
});

describeEachSdk('MCP tasks', (sdk) => {
  it('end to end: the call answers with a task at once, progress becomes task status, the result is fetched', async () => {
    fx = await setup(sdk);
    const { kit } = fx;
    const created = await startTask(sdk, kit, 'slow', { steps: 3 }, { _meta: { progressToken: 'p-1' } });
    expect(created.error).toBeUndefined();
    const id = taskIdOf(sdk, created);
    expect(id).toMatch(/^[A-Za-z0-9_-]{22,}$/); // ≥ 128 random bits
    if (sdk.era === 'legacy') {
      // nested CreateTaskResult, ttl / pollInterval, tied to the task
      expect(created.result.task).toMatchObject({ taskId: id, status: 'working', ttl: 60_000, pollInterval: 250 });
      expect(created.result.task.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(created.result._meta[RELATED_TASK_META_KEY]).toEqual({ taskId: id });
      expect(created.result.content).toBeUndefined();
    } else {
      // flat CreateTaskResult, sent only once tasks/get resolves
      expect(created.result).toMatchObject({
        resultType: 'task',
        taskId: id,
        status: 'working',
        ttlMs: 3_600_000,
        pollIntervalMs: 250,
      });
      expect(created.result.task).toBeUndefined();
      expect(created.result.content).toBeUndefined();
      const first = await rpc(kit, 'tasks/get', { taskId: id });
      expect(first.result).toMatchObject({ taskId: id, resultType: 'complete' });
    }
    const done = await pollUntil(kit, id, terminal);
    expect(done.status).toBe('completed');
    if (sdk.era === 'legacy') {
      // the original token stayed valid: progress kept flowing after CreateTaskResult, related-task tagged, increasing
      await until(() => kit.wire.progress('p-1').length >= 3, 5_000, 'three progress notifications');
      const progress = kit.wire
        .notifications('notifications/progress')
        .filter((m) => m.message.params.progressToken === 'p-1');
      const values = progress.map((m) => m.message.params.progress);
      expect(values).toEqual([...values].sort((a, b) => a - b));
      expect(new Set(values).size).toBe(values.length);
      for (const m of progress) expect(m.message.params._meta[RELATED_TASK_META_KEY]).toEqual({ taskId: id });
      const createdAt = kit.wire.messages.find(
        (m) => m.message.id === created.id && m.direction === 'server->client',
      )!.seq;
      expect(progress.every((m) => m.seq > createdAt)).toBe(true);
      // notifications/tasks/status: the terminal one carries the task; no progress after it
      await until(
        () => kit.wire.notifications('notifications/tasks/status').some((m) => m.message.params.status === 'completed'),
        5_000,
        'completed status',
      );
      const completedAt = kit.wire
        .notifications('notifications/tasks/status')
        .find((m) => m.message.params.status === 'completed')!;
      expect(completedAt.message.params).toMatchObject({ taskId: id, status: 'completed' });
      expect(completedAt.message.params._meta?.[RELATED_TASK_META_KEY]).toBeUndefined();
      expect(progress.every((m) => m.seq < completedAt.seq)).toBe(true);
      // tasks/result: exactly the original result, tied to the task
      const result = await rpc(kit, 'tasks/result', { taskId: id });
      expect(result.result.content).toEqual([{ type: 'text', text: 'did 3 steps' }]);
      expect(result.result._meta[RELATED_TASK_META_KEY]).toEqual({ taskId: id });
      // tasks/list has it; tasks/get results carry no related-task
      const list = await rpc(kit, 'tasks/list', {});
      expect(list.result.tasks.map((t: any) => t.taskId)).toContain(id);
      expect(done._meta?.[RELATED_TASK_META_KEY]).toBeUndefined();
    } else {
      expect(done.result.content).toEqual([{ type: 'text', text: 'did 3 steps' }]);
      expect(done.result._meta?.[RELATED_TASK_META_KEY]).toBeUndefined();
      // 2026: no progress on the creating call's token (a tasks/get with a token gets it: fronts.test.ts), and tasks/result / tasks/list do not exist
      expect((await rpc(kit, 'tasks/result', { taskId: id })).error.code).toBe(-32601);
      expect((await rpc(kit, 'tasks/list', {})).error.code).toBe(-32601);
    }
    expect(fx.errors).toEqual([]);
    expect(engineErrors).toEqual([]);
  });

  it('a tool error is a completed task with the isError result (2025: status failed, tasks/result returns it); a protocol error fails the task with that error', async () => {
    fx = await setup(sdk);
    const { kit } = fx;
    const oops = taskIdOf(sdk, await startTask(sdk, kit, 'oops'));
    const boom = taskIdOf(sdk, await startTask(sdk, kit, 'boom'));
    const a = await pollUntil(kit, oops, terminal);
    const b = await pollUntil(kit, boom, terminal);
    expect(b.status).toBe('failed');
    if (sdk.era === 'legacy') {
      expect(a.status).toBe('failed');
      // a job that was over before the front subscribed still gets its status notification
      await until(
        () =>
          kit.wire.notifications('notifications/tasks/status').filter((m) => m.message.params.status === 'failed')
            .length === 2,
        5_000,
        'both failed statuses',
      );
      const ra = await rpc(kit, 'tasks/result', { taskId: oops });
      expect(ra.result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'tool failed' }] });
      const rb = await rpc(kit, 'tasks/result', { taskId: boom });
      expect(rb.error).toMatchObject({ code: -32603, message: expect.stringContaining('the backend is down') });
    } else {
      expect(a).toMatchObject({ status: 'completed', result: { isError: true } });
      expect(b.error).toMatchObject({ code: -32603, message: expect.stringContaining('the backend is down') });
      expect(b.result).toBeUndefined();
    }
  });

  it('tasks/cancel: the job signal aborts, the handler finally runs once, no result and no notification after', async () => {
    fx = await setup(sdk);
    const { kit } = fx;
    const id = taskIdOf(sdk, await startTask(sdk, kit, 'wait', {}, { _meta: { progressToken: 'p-c' } }));
    const cancel = await rpc(kit, 'tasks/cancel', { taskId: id });
    expect(cancel.error).toBeUndefined();
    if (sdk.era === 'legacy') expect(cancel.result).toMatchObject({ taskId: id, status: 'cancelled' });
    else expect(cancel.result).toEqual({ resultType: 'complete', _meta: expect.anything() });
    await until(() => fx!.finallies.length > 0, 5_000, 'the handler finally');
    const cancelledAt = kit.wire.messages.length;
    fx.release(); // would have completed it
    await new Promise((r) => setTimeout(r, 80));
    const after = await pollUntil(kit, id, terminal);
    expect(after.status).toBe('cancelled');
    expect(fx.finallies).toEqual(['wait']);
    const late = kit.wire.messages
      .slice(cancelledAt)
      .filter((m) => m.direction === 'server->client' && m.message.method !== undefined);
    expect(
      late.filter((m) => m.message.params?.progressToken === 'p-c' || m.message.params?.status === 'completed'),
    ).toEqual([]);
    if (sdk.era === 'legacy') {
      // cancelling a terminal task: -32602; tasks/result of a cancelled task has no result
      const again = await rpc(kit, 'tasks/cancel', { taskId: id });
      expect(again.error.code).toBe(-32602);
      expect((await rpc(kit, 'tasks/result', { taskId: id })).error).toBeDefined();
    } else {
      // 2026: cancellation is an idempotent empty ack
      expect((await rpc(kit, 'tasks/cancel', { taskId: id })).result).toMatchObject({ resultType: 'complete' });
    }
  });

  it('a task that asks for input: input_required, answered, finished', async () => {
    fx = await setup(sdk);
    const { kit } = fx;
    const id = taskIdOf(sdk, await startTask(sdk, kit, 'ask'));
    const waiting = await pollUntil(kit, id, (r) => r.status === 'input_required' || terminal(r));
    expect(waiting.status).toBe('input_required');
    if (sdk.era === 'legacy') {
      // tasks/result delivers the elicitation on its own stream, related-task tagged; the answer re-enters the handler
      const result = await rpc(kit, 'tasks/result', { taskId: id });
      expect(result.result.content).toEqual([{ type: 'text', text: 'hello Ada' }]);
      expect(result.result._meta[RELATED_TASK_META_KEY]).toEqual({ taskId: id });
      const elicit = kit.wire.serverRequests('elicitation/create');
      expect(elicit).toHaveLength(1);
      expect(elicit[0]!.message.params._meta[RELATED_TASK_META_KEY]).toEqual({ taskId: id });
      expect(elicit[0]!.message.params.message).toBe('Who is asking?');
    } else {
      const [key] = Object.keys(waiting.inputRequests);
      expect(waiting.inputRequests[key!]).toMatchObject({
        method: 'elicitation/create',
        params: { message: 'Who is asking?' },
      });
      // unknown keys are ignored; the ack is empty
      const ack = await rpc(kit, 'tasks/update', {
        taskId: id,
        inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } }, nope: { action: 'accept' } },
      });
      expect(ack.error).toBeUndefined();
      expect(ack.result).toMatchObject({ resultType: 'complete' });
      expect(Object.keys(ack.result).filter((k) => k !== 'resultType' && k !== '_meta')).toEqual([]);
      const done = await pollUntil(kit, id, terminal);
      expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'hello Ada' }] } });
      // an answer after the fact changes nothing
      expect(
        (await rpc(kit, 'tasks/update', { taskId: id, inputResponses: { [key!]: { action: 'decline' } } })).result,
      ).toMatchObject({ resultType: 'complete' });
      expect((await rpc(kit, 'tasks/get', { taskId: id })).result.result.content[0].text).toBe('hello Ada');
    }
  });

  it('a task waiting for input is cancelled: it stays cancelled, the handler is not entered again', async () => {
    fx = await setup(sdk, {
      connect: {
        elicit: async (_p: unknown, info: { signal: AbortSignal }) =>
          new Promise((_, reject) => info.signal.addEventListener('abort', () => reject(new Error('withdrawn')))),
      },
    });
    const { kit } = fx;
    const id = taskIdOf(sdk, await startTask(sdk, kit, 'ask'));
    await pollUntil(kit, id, (r) => r.status === 'input_required');
    if (sdk.era === 'modern') {
      // malformed answers to an outstanding key: -32602, nothing changes
      const [key] = Object.keys((await rpc(kit, 'tasks/get', { taskId: id })).result.inputRequests);
      const bad = await rpc(kit, 'tasks/update', { taskId: id, inputResponses: { [key!]: { action: 'maybe' } } });
      expect(bad.error.code).toBe(-32602);
      expect((await rpc(kit, 'tasks/get', { taskId: id })).result.status).toBe('input_required');
    }
    const pending = sdk.era === 'legacy' ? rpc(kit, 'tasks/result', { taskId: id }) : undefined;
    if (pending)
      await until(() => kit.wire.serverRequests('elicitation/create').length === 1, 5_000, 'the elicitation');
    expect((await rpc(kit, 'tasks/cancel', { taskId: id })).error).toBeUndefined();
    expect((await pollUntil(kit, id, terminal)).status).toBe('cancelled');
    if (pending) {
      expect((await pending).error).toMatchObject({ code: -32600, message: expect.stringContaining('cancelled') });
      // the question the task no longer asks was withdrawn (notifications/cancelled for the elicitation)
      await until(() => kit.elicitations[0]?.signal.aborted === true, 5_000, 'the elicitation withdrawn');
    }
    if (sdk.era === 'modern') {
      const late = await rpc(kit, 'tasks/update', {
        taskId: id,
        inputResponses: { name: { action: 'accept', content: { name: 'Late' } } },
      });
      expect(late.result).toMatchObject({ resultType: 'complete' });
    }
    await new Promise((r) => setTimeout(r, 50));
    expect((await rpc(kit, 'tasks/get', { taskId: id })).result.status).toBe('cancelled');
  });

  it('too many live tasks for one owner: a BUSY refusal the model can read, no task', async () => {
    fx = await setup(sdk, { maxLive: 1 });
    const { kit } = fx;
    const first = await startTask(sdk, kit, 'wait');
    expect(first.error).toBeUndefined();
    const second = await startTask(sdk, kit, 'wait');
    expect(second.result).toMatchObject({ isError: true });
    expect(JSON.stringify(second.result)).toContain('BUSY');
    expect(second.result.task ?? second.result.taskId).toBeUndefined();
    // once the first is cancelled there is room again
    await rpc(kit, 'tasks/cancel', { taskId: taskIdOf(sdk, first) });
    expect(taskIdOf(sdk, await startTask(sdk, kit, 'wait'))).toBeTruthy();
  });

  it('bad input: unknown, malformed and expired task ids are -32602; the server keeps serving', async () => {
    fx = await setup(sdk, { ttlMs: 60 });
    const { kit } = fx;
    for (const method of [
      'tasks/get',
      'tasks/cancel',
      ...(sdk.era === 'legacy' ? ['tasks/result'] : ['tasks/update']),
    ]) {
      const extra = method === 'tasks/update' ? { inputResponses: {} } : {};
      expect((await rpc(kit, method, { taskId: 'no-such-task', ...extra })).error.code, method).toBe(-32602);
      expect((await rpc(kit, method, { taskId: 42, ...extra })).error.code, method).toBe(-32602);
      expect((await rpc(kit, method, { ...extra })).error.code, method).toBe(-32602);
    }
    // expired: a short TTL (2025: the client's ttl, 2026: the server's)
    const res = await rpc(
      kit,
      'tools/call',
      sdk.era === 'legacy'
        ? { name: 'plain', arguments: {}, task: { ttl: 60 } }
        : { name: 'slow', arguments: { steps: 1 } },
    );
    if (sdk.era === 'legacy') {
      // 'plain' is forbidden as a task: the wrong mode is -32601
      expect(res.error.code).toBe(-32601);
    }
    const short =
      sdk.era === 'legacy'
        ? taskIdOf(sdk, await rpc(kit, 'tools/call', { name: 'slow', arguments: { steps: 1 }, task: { ttl: 60 } }))
        : taskIdOf(sdk, res);
    await new Promise((r) => setTimeout(r, 250));
    expect((await rpc(kit, 'tasks/get', { taskId: short })).error.code).toBe(-32602);
    // a task still running when its TTL passes is aborted (its handler's finally runs) and gone
    const running =
      sdk.era === 'legacy'
        ? await rpc(kit, 'tools/call', { name: 'wait', arguments: {}, task: { ttl: 60 } })
        : await startTask(sdk, kit, 'wait');
    const runningId = taskIdOf(sdk, running);
    await until(() => fx!.finallies.includes('wait'), 5_000, 'the expired job aborted');
    expect((await rpc(kit, 'tasks/get', { taskId: runningId })).error.code).toBe(-32602);
    // and it serves on
    const ok = await rpc(kit, 'tools/call', { name: 'plain', arguments: {} });
    expect(ok.result.content).toEqual([{ type: 'text', text: 'plain' }]);
  });
});

describeEachSdk(
  'MCP tasks, 2025-11-25 only',
  (sdk) => {
    it('execution.taskSupport on tools/list; required without params.task and forbidden with it are -32601', async () => {
      fx = await setup(sdk);
      const { kit } = fx;
      const list = await rpc(kit, 'tools/list', {});
      const byName = Object.fromEntries(list.result.tools.map((t: any) => [t.name, t.execution?.taskSupport]));
      expect(byName).toMatchObject({ slow: 'optional', needs: 'required' });
      expect([undefined, 'forbidden']).toContain(byName.plain);
      expect((await rpc(kit, 'tools/call', { name: 'needs', arguments: {} })).error.code).toBe(-32601);
      expect((await rpc(kit, 'tools/call', { name: 'plain', arguments: {}, task: {} })).error.code).toBe(-32601);
      // an optional tool without params.task runs inline as usual
      expect((await rpc(kit, 'tools/call', { name: 'slow', arguments: { steps: 1 } })).result.content[0].text).toBe(
        'did 1 steps',
      );
    });

    it('ttl: the requested one is granted up to the maximum; pollInterval is given', async () => {
      fx = await setup(sdk);
      const { kit } = fx;
      const a = await rpc(kit, 'tools/call', { name: 'wait', arguments: {}, task: { ttl: 12_345 } });
      expect(a.result.task).toMatchObject({ ttl: 12_345, pollInterval: 250 });
      const b = await rpc(kit, 'tools/call', { name: 'wait', arguments: {}, task: { ttl: 10 ** 12 } });
      expect(b.result.task.ttl).toBe(86_400_000);
      const c = await rpc(kit, 'tools/call', { name: 'wait', arguments: {}, task: {} });
      expect(c.result.task.ttl).toBe(3_600_000);
      // tasks/list: newest first; a cursor the server did not issue is -32602
      const list = await rpc(kit, 'tasks/list', {});
      expect(list.result.tasks.map((t: any) => t.taskId)).toEqual([c, b, a].map((r) => r.result.task.taskId));
      expect((await rpc(kit, 'tasks/list', { cursor: 'bogus' })).error.code).toBe(-32602);
      expect((await rpc(kit, 'tasks/list', { cursor: 7 })).error.code).toBe(-32602);
      // the 2026 extension's method does not exist on a 2025-11-25 session
      expect((await rpc(kit, 'tasks/update', { taskId: a.result.task.taskId, inputResponses: {} })).error.code).toBe(
        -32601,
      );
    });
  },
  { eras: ['legacy'] },
);

describeEachSdk(
  'MCP tasks, 2026 tasks extension only',
  (sdk) => {
    it('the extension is advertised in server/discover; a non-opted-in request gets -32021 on tasks/* and on a required tool, an optional tool runs inline', async () => {
      fx = await setup(sdk);
      const { kit } = fx;
      const discover = await rpc(kit, 'server/discover', {});
      expect(discover.result.capabilities.extensions[TASKS_EXTENSION]).toEqual({});
      expect(discover.result.capabilities.tasks).toBeUndefined();
      const id = taskIdOf(sdk, await startTask(sdk, kit, 'wait'));
      for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
        const res = await rpc(kit, method, { taskId: id, inputResponses: {}, _meta: NO_EXT });
        expect(res.error, method).toMatchObject({
          code: -32021,
          data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        });
      }
      const required = await rpc(kit, 'tools/call', { name: 'needs', arguments: {}, _meta: NO_EXT });
      expect(required.error).toMatchObject({
        code: -32021,
        data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      });
      const inline = await rpc(kit, 'tools/call', { name: 'slow', arguments: { steps: 1 }, _meta: NO_EXT });
      expect(inline.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'did 1 steps' }] });
      expect(inline.result.taskId).toBeUndefined();
      // the task is still there for a request that opted in
      expect((await rpc(kit, 'tasks/get', { taskId: id, _meta: OPT_IN })).result.status).toBe('working');
    });

    it('askFirst: round 1 asks over MRTR (sealed requestState, no task yet); the retry with the answer becomes the task, whose result has it', async () => {
      const engine = new JobEngine({ store: new MemoryJobStore(), progressWriteMs: 0 });
      const front = taskFront({ engine, taskSupport: SUPPORT, askFirst: ['ask'] });
      const rounds = mrtr();
      const errors: unknown[] = [];
      const kit = await sdk.connect(
        () => {
          const { server } = tetheredServer(sdk, [rounds, front], errors);
          const approval = { name: ask.string('Your name') };
          server.registerTool(
            'ask',
            {},
            handler(async () => {
              const answer = readInputResult(approval);
              if (!answer) return requireInput.elicit('Who is asking?', approval);
              return {
                content: [
                  {
                    type: 'text' as const,
                    text: `hello ${answer.action === 'accept' ? answer.content.name : answer.action}`,
                  },
                ],
              };
            }),
          );
          return server;
        },
        { capabilities: { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } } } as never,
      );
      fx = { kit, errors, finallies: [], release: () => {}, engine };
      const round1 = await rpc(kit, 'tools/call', { name: 'ask', arguments: {} });
      expect(round1.result).toMatchObject({
        resultType: 'input_required',
        inputRequests: { name: { method: 'elicitation/create' } },
      });
      expect(typeof round1.result.requestState).toBe('string');
      expect(round1.result.taskId).toBeUndefined();
      const round2 = await rpc(kit, 'tools/call', {
        name: 'ask',
        arguments: {},
        inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
        requestState: round1.result.requestState,
      });
      expect(round2.result).toMatchObject({ resultType: 'task', status: 'working' });
      expect(round2.result.requestState).toBeUndefined();
      const done = await pollUntil(kit, round2.result.taskId, terminal);
      expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'hello Ada' }] } });
      // a forged state on the retry is refused, no task
      const forged = await rpc(kit, 'tools/call', {
        name: 'ask',
        arguments: {},
        inputResponses: { name: { action: 'accept', content: { name: 'Eve' } } },
        requestState: `${round1.result.requestState}x`,
      });
      expect(forged.error?.code).toBe(-32602);
      expect(errors).toEqual([]);
    });
  },
  { eras: ['modern'] },
);
