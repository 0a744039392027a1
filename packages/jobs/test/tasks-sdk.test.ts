/**
 * MCP tasks with the SDKs' own client machinery, ownership across sessions and principals, and a
 * 2025-11-25 task on a real stateful Streamable HTTP session whose streams drop.
 */
import { handler, progressEvent, tether, type CallContext } from '@mcp-tether/core';
import {
  connect,
  connectHttp,
  connectStdio,
  firstText,
  readSse,
  serveHttp,
  until,
  type TestClient,
} from '@mcp-tether/testing';
import { connectV2, type V2TestClient } from '@mcp-tether/testing/v2';
import { ask, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { JobEngine } from '../src/engine.js';
import { MemoryJobStore } from '../src/memory.js';
import { jobs } from '../src/middleware.js';
import { RELATED_TASK_META_KEY, TASKS_EXTENSION, taskFront } from '../src/tasks/index.js';

const SUPPORT = { slow: 'optional', ask: 'optional', wait: 'optional' } as const;

function newEngine(): JobEngine {
  return new JobEngine({ store: new MemoryJobStore({ sweepIntervalMs: 20 }), progressWriteMs: 0 });
}

function tools<S extends { registerTool: (...a: any[]) => unknown }>(
  server: S,
  gate?: Promise<void>,
  finallies?: string[],
): S {
  server.registerTool(
    'slow',
    { inputSchema: { steps: z.number() } },
    handler(async function* ({ steps }: { steps: number }) {
      for (let i = 1; i <= steps; i++) {
        await new Promise((r) => setTimeout(r, 20));
        yield progressEvent(i, steps, `step ${i}`);
      }
      return { content: [{ type: 'text' as const, text: `did ${steps} steps` }] };
    }),
  );
  const approval = { name: ask.string('Your name') };
  server.registerTool(
    'ask',
    {},
    handler(async () => {
      const answer = readInputResult(approval);
      if (!answer) return requireInput.elicit('Who is asking?', approval);
      return {
        content: [
          { type: 'text' as const, text: answer.action === 'accept' ? `hello ${answer.content.name}` : answer.action },
        ],
      };
    }),
  );
  server.registerTool(
    'wait',
    {},
    handler(async (ctx: CallContext) => {
      try {
        await Promise.race([
          gate,
          new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
          ),
        ]);
        return { content: [{ type: 'text' as const, text: 'released' }] };
      } finally {
        finallies?.push('wait');
      }
    }),
  );
  return server;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
});

describe('2025-11-25 tasks with the SDK 1.x client (client.experimental.tasks)', () => {
  it('callToolStream: the tool is known as a task from tools/list, progress reaches onprogress after CreateTaskResult, the result arrives', async () => {
    const front = taskFront({ engine: newEngine(), taskSupport: SUPPORT, pollIntervalMs: 30 });
    const kit = await connect(tools(tether(new McpServerV1({ name: 't', version: '1' }), [front])));
    closers.push(() => kit.close());
    await kit.client.listTools(); // the SDK learns execution.taskSupport
    const seen: string[] = [];
    const progress: number[] = [];
    for await (const m of kit.client.experimental.tasks.callToolStream(
      { name: 'slow', arguments: { steps: 3 } },
      CallToolResultSchema,
      {
        onprogress: (p) => progress.push(p.progress),
      },
    )) {
      seen.push(m.type === 'taskStatus' ? `status:${m.task.status}` : m.type);
      if (m.type === 'result') expect(m.result.content).toEqual([{ type: 'text', text: 'did 3 steps' }]);
      if (m.type === 'error') throw m.error;
    }
    expect(seen[0]).toBe('taskCreated');
    expect(seen.at(-1)).toBe('result');
    expect(seen).toContain('status:completed');
    // the SDK kept the request's progress handler alive for the task (its token stays valid)
    await until(() => progress.length >= 1, 3_000, 'progress after CreateTaskResult');
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(kit.clientErrors).toEqual([]);
  });

  it('callToolStream with a question: the SDK calls tasks/result on input_required, answers the related-task elicitation, gets the result', async () => {
    const front = taskFront({ engine: newEngine(), taskSupport: SUPPORT, pollIntervalMs: 30 });
    const kit = await connect(tools(tether(new McpServerV1({ name: 't', version: '1' }), [front])), {
      elicit: [{ action: 'accept', content: { name: 'Grace' } }],
    });
    closers.push(() => kit.close());
    const seen: string[] = [];
    let result: unknown;
    for await (const m of kit.client.experimental.tasks.callToolStream(
      { name: 'ask', arguments: {} },
      CallToolResultSchema,
      { task: { ttl: 30_000 } },
    )) {
      seen.push(m.type === 'taskStatus' ? `status:${m.task.status}` : m.type);
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') throw m.error;
    }
    expect(result).toMatchObject({
      content: [{ type: 'text', text: 'hello Grace' }],
      _meta: { [RELATED_TASK_META_KEY]: { taskId: expect.any(String) } },
    });
    expect(seen).toContain('status:input_required');
    expect(kit.elicitations).toHaveLength(1);
    expect(kit.elicitations[0]!.params._meta?.[RELATED_TASK_META_KEY]).toBeDefined();
  });

  it('client.experimental.tasks: getTask, listTasks, cancelTask (a terminal task: -32602)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const finallies: string[] = [];
    const front = taskFront({ engine: newEngine(), taskSupport: SUPPORT });
    const kit = await connect(tools(tether(new McpServerV1({ name: 't', version: '1' }), [front]), gate, finallies));
    closers.push(async () => {
      release();
      await kit.close();
    });
    const tasks = kit.client.experimental.tasks;
    const created = (await kit.client.request(
      { method: 'tools/call', params: { name: 'wait', arguments: {}, task: { ttl: 10_000 } } },
      (
        await import('@modelcontextprotocol/sdk/types.js')
      ).CreateTaskResultSchema,
    )) as {
      task: { taskId: string };
    };
    const id = created.task.taskId;
    expect((await tasks.getTask(id)).status).toBe('working');
    expect((await tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([id]);
    expect((await tasks.cancelTask(id)).status).toBe('cancelled');
    await until(() => finallies.length === 1, 3_000, 'the handler finally');
    await expect(tasks.cancelTask(id)).rejects.toMatchObject({ code: -32602 });
    await expect(tasks.getTask('nope')).rejects.toMatchObject({ code: -32602 });
  });
});

describe('composed: jobs({ fronts: [taskFront(...)] }) on SDK 1.x and 2.x (2026)', () => {
  it('the jobs middleware asks the task front first; progress is tapped once; handle mode still serves other clients', async () => {
    const engine = newEngine();
    const front = taskFront({ engine, taskSupport: SUPPORT, pollIntervalMs: 30 });
    const kit = await connect(
      tools(tether(new McpServerV1({ name: 't', version: '1' }), [jobs({ engine, fronts: [front] })])),
    );
    closers.push(() => kit.close());
    const progress: number[] = [];
    let result: unknown;
    for await (const m of kit.client.experimental.tasks.callToolStream(
      { name: 'slow', arguments: { steps: 2 } },
      CallToolResultSchema,
      {
        task: { ttl: 10_000 },
        onprogress: (p) => progress.push(p.progress),
      },
    )) {
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') throw m.error;
    }
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'did 2 steps' }] });
    await until(() => progress.length >= 1, 3_000, 'progress');
    expect(new Set(progress).size).toBe(progress.length);
    // 2026 through per-request servers sharing the engine
    const modern = await connectV2(
      () => tools(tether(new McpServerV2({ name: 't', version: '1' }), [jobs({ engine, fronts: [front] })])),
      {
        era: 'modern',
        capabilities: { extensions: { [TASKS_EXTENSION]: {} } } as never,
      },
    );
    closers.push(() => modern.close());
    const id = `c-${Math.random()}`;
    const res = modern.wire.waitFor(
      (m) => m.message.id === id && m.direction === 'server->client' && m.message.method === undefined,
      5_000,
    );
    void modern.sendRaw({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'slow', arguments: { steps: 1 } },
    });
    expect((await res).message.result).toMatchObject({ resultType: 'task', status: 'working' });
  });
});

describe('2025-11-25 task over stdio (a real child process, SDK 1.x client)', () => {
  const fixture = fileURLToPath(new URL('./fixtures/tasks-stdio-server.ts', import.meta.url));
  for (const sdk of ['v1', 'v2'] as const) {
    it(`${sdk} server: progress with the request's token after CreateTaskResult; tasks/cancel stops it, finally once, nothing after`, async () => {
      const kit = await connectStdio(process.execPath, ['--import', 'tsx', fixture], {
        env: { ...process.env, TETHER_FIXTURE_SDK: sdk } as Record<string, string>,
      });
      closers.push(() => kit.close());
      const created = (await kit.client.request(
        {
          method: 'tools/call',
          params: { name: 'wait', arguments: {}, task: { ttl: 30_000 }, _meta: { progressToken: 'stdio-1' } },
        },
        (
          await import('@modelcontextprotocol/sdk/types.js')
        ).CreateTaskResultSchema,
      )) as { task: { taskId: string } };
      const id = created.task.taskId;
      await until(() => kit.wire.progress('stdio-1').length >= 2, 5_000, 'progress over stdio');
      const cancelled = await kit.client.experimental.tasks.cancelTask(id);
      expect(cancelled.status).toBe('cancelled');
      const seenAtCancel = kit.wire.progress('stdio-1').length;
      let done = '0';
      for (let i = 0; i < 100 && done !== '1'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        done = firstText(await kit.client.callTool({ name: 'done', arguments: {} })) ?? '';
      }
      expect(done).toBe('1');
      await new Promise((r) => setTimeout(r, 100));
      // at most one progress notification was already on its way when the cancel landed
      expect(kit.wire.progress('stdio-1').length - seenAtCancel).toBeLessThanOrEqual(1);
      const late = kit.wire
        .notifications('notifications/tasks/status')
        .filter((m) => m.message.params.status === 'completed');
      expect(late).toEqual([]);
      expect((await kit.client.experimental.tasks.getTask(id)).status).toBe('cancelled');
    });
  }
});

describe('ownership: another session or principal sees a task as unknown (-32602)', () => {
  it('2025-11-25: a task of session A is invisible to session B (same engine), on SDK 1.x and 2.x', async () => {
    for (const sdk of ['v1', 'v2'] as const) {
      const engine = newEngine();
      const front = taskFront({ engine, taskSupport: SUPPORT });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const make = () =>
        tools(
          sdk === 'v1'
            ? tether(new McpServerV1({ name: 't', version: '1' }), [front])
            : tether(new McpServerV2({ name: 't', version: '1' }), [front]),
          gate,
        );
      const a: TestClient | V2TestClient =
        sdk === 'v1'
          ? await connect(make() as never, { sessionId: 'session-A' })
          : await connectV2(make() as never, { sessionId: 'session-A' });
      const b: TestClient | V2TestClient =
        sdk === 'v1'
          ? await connect(make() as never, { sessionId: 'session-B' })
          : await connectV2(make() as never, { sessionId: 'session-B' });
      closers.push(async () => {
        release();
        await a.close();
        await b.close();
      });
      const rpc = async (kit: TestClient | V2TestClient, method: string, params: Record<string, unknown>) => {
        const id = `o-${Math.random()}`;
        const res = kit.wire.waitFor(
          (m) => m.direction === 'server->client' && m.message.id === id && m.message.method === undefined,
          5_000,
        );
        await kit.sendRaw({ jsonrpc: '2.0', id, method, params } as never);
        return (await res).message;
      };
      const created = await rpc(a, 'tools/call', { name: 'wait', arguments: {}, task: {} });
      const id = created.result.task.taskId as string;
      for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
        const res = await rpc(b, method, { taskId: id });
        expect(res.error, `${sdk} ${method}`).toMatchObject({
          code: -32602,
          message: expect.stringContaining('Task not found'),
        });
      }
      expect((await rpc(b, 'tasks/list', {})).result.tasks).toEqual([]);
      expect((await rpc(a, 'tasks/get', { taskId: id })).result.status).toBe('working');
    }
  });

  it('2026 tasks extension: a task of principal A is invisible to principal B, through per-request servers sharing the engine', async () => {
    const engine = newEngine();
    const front = taskFront({ engine, taskSupport: SUPPORT });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const factory = () => tools(tether(new McpServerV2({ name: 't', version: '1' }), [front]), gate);
    const caps = { extensions: { [TASKS_EXTENSION]: {} } } as never;
    const a = await connectV2(factory, {
      era: 'modern',
      capabilities: caps,
      authInfo: { token: 'a', clientId: 'alice', scopes: [] },
    });
    const b = await connectV2(factory, {
      era: 'modern',
      capabilities: caps,
      authInfo: { token: 'b', clientId: 'bob', scopes: [] },
    });
    closers.push(async () => {
      release();
      await a.close();
      await b.close();
    });
    const rpc = async (kit: V2TestClient, method: string, params: Record<string, unknown>) => {
      const id = `p-${Math.random()}`;
      const res = kit.wire.waitFor(
        (m) => m.direction === 'server->client' && m.message.id === id && m.message.method === undefined,
        5_000,
      );
      void kit.sendRaw({ jsonrpc: '2.0', id, method, params });
      return (await res).message;
    };
    const created = await rpc(a, 'tools/call', { name: 'wait', arguments: {} });
    expect(created.result.resultType).toBe('task');
    const id = created.result.taskId as string;
    for (const [method, extra] of [
      ['tasks/get', {}],
      ['tasks/cancel', {}],
      ['tasks/update', { inputResponses: {} }],
    ] as const) {
      const res = await rpc(b, method, { taskId: id, ...extra });
      expect(res.error, method).toMatchObject({ code: -32602 });
    }
    // B's cancel did nothing
    expect((await rpc(a, 'tasks/get', { taskId: id })).result.status).toBe('working');
  });
});

describe('2026 tasks across replicas: two engines sharing one store', () => {
  it('a task started on replica 0 is polled, answered and finished through replica 1; a cancel through replica 1 stops the runner on 0', async () => {
    const store = new MemoryJobStore();
    const replicas = [0, 1].map(() => {
      const engine = new JobEngine({ store, progressWriteMs: 0 });
      return { engine, front: taskFront({ engine, taskSupport: SUPPORT }) };
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const finallies: string[] = [];
    /** Which replica serves the next request (a load balancer routing by method). */
    let route = 0;
    const kit = await connectV2(
      () => tools(tether(new McpServerV2({ name: 't', version: '1' }), [replicas[route]!.front]), gate, finallies),
      {
        era: 'modern',
        // it answers the task's form: it declares form elicitation (a task never asks one that does not)
        capabilities: { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } } as never,
      },
    );
    closers.push(async () => {
      release();
      await kit.close();
    });
    const rpc = async (method: string, params: Record<string, unknown>) => {
      route = method === 'tools/call' ? 0 : 1;
      const id = `r-${Math.random()}`;
      const res = kit.wire.waitFor(
        (m) => m.direction === 'server->client' && m.message.id === id && m.message.method === undefined,
        5_000,
      );
      void kit.sendRaw({ jsonrpc: '2.0', id, method, params });
      return (await res).message;
    };
    const poll = async (id: string, status: string) => {
      let got: Record<string, any> = {};
      for (let i = 0; i < 400 && got.status !== status; i++) {
        got = (await rpc('tasks/get', { taskId: id })).result;
        if (got.status !== status) await new Promise((r) => setTimeout(r, 10));
      }
      return got;
    };
    // a question: asked by the runner on replica 0, answered through replica 1
    const asked = (await rpc('tools/call', { name: 'ask', arguments: {} })).result.taskId as string;
    expect(replicas[0]!.engine.isLocal(asked)).toBe(true);
    expect(replicas[1]!.engine.isLocal(asked)).toBe(false);
    const waitingForInput = await poll(asked, 'input_required');
    const [key] = Object.keys(waitingForInput.inputRequests);
    expect(
      (
        await rpc('tasks/update', {
          taskId: asked,
          inputResponses: { [key!]: { action: 'accept', content: { name: 'Lin' } } },
        })
      ).error,
    ).toBeUndefined();
    expect(await poll(asked, 'completed')).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: 'hello Lin' }] },
    });
    // a cancel through replica 1 stops the runner on replica 0
    const waiting = (await rpc('tools/call', { name: 'wait', arguments: {} })).result.taskId as string;
    expect(replicas[0]!.engine.isLocal(waiting)).toBe(true);
    expect((await rpc('tasks/cancel', { taskId: waiting })).result).toMatchObject({ resultType: 'complete' });
    await until(() => finallies.includes('wait'), 5_000, 'the runner stopped');
    expect((await rpc('tasks/get', { taskId: waiting })).result.status).toBe('cancelled');
  });
});

describe('2025-11-25 task on a stateful Streamable HTTP session (SDK 1.x, real HTTP on 127.0.0.1)', () => {
  it('started on a session; the tasks/result stream drops mid-wait; the task lives on and is polled and fetched on the same session', async () => {
    const engine = newEngine();
    const front = taskFront({ engine, taskSupport: SUPPORT, pollIntervalMs: 50 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const finallies: string[] = [];
    const http = await serveHttp(() =>
      tools(tether(new McpServerV1({ name: 't', version: '1' }), [front]), gate, finallies),
    );
    closers.push(() => http.close());
    const kit = await connectHttp(http.url);
    closers.push(() => kit.close());
    const sessionId = kit.transport.sessionId!;
    expect(sessionId).toBeTruthy();
    const post = (body: Record<string, unknown>, signal?: AbortSignal) =>
      fetch(http.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': sessionId,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', ...body }),
        ...(signal && { signal }),
      });
    const messagesOf = async (res: Response, stopAfter?: number) => {
      const out: any[] = [];
      await readSse(res.body!, (d) => out.push(JSON.parse(d)));
      return stopAfter === undefined ? out : out.slice(0, stopAfter);
    };
    // start: the CreateTaskResult comes on the POST stream, which then ends
    const created = (
      await messagesOf(
        await post({ id: 1, method: 'tools/call', params: { name: 'wait', arguments: {}, task: { ttl: 60_000 } } }),
      )
    ).find((m) => m.id === 1);
    const id = created.result.task.taskId as string;
    // a tasks/result that blocks; its stream drops (the client goes away) while the task works
    const drop = new AbortController();
    const waiting = await post({ id: 2, method: 'tasks/result', params: { taskId: id } }, drop.signal);
    expect(waiting.status).toBe(200);
    await new Promise((r) => setTimeout(r, 100));
    drop.abort();
    await new Promise((r) => setTimeout(r, 100));
    // the task is still working, on the same session
    const polled = (await messagesOf(await post({ id: 3, method: 'tasks/get', params: { taskId: id } }))).find(
      (m) => m.id === 3,
    );
    expect(polled.result).toMatchObject({ taskId: id, status: 'working' });
    expect(finallies).toEqual([]);
    // it finishes; a new tasks/result on the same session gets exactly the result, tied to the task
    const again = post({ id: 4, method: 'tasks/result', params: { taskId: id } });
    release();
    const final = (await messagesOf(await again)).find((m) => m.id === 4);
    expect(final.result).toMatchObject({
      content: [{ type: 'text', text: 'released' }],
      _meta: { [RELATED_TASK_META_KEY]: { taskId: id } },
    });
    expect(finallies).toEqual(['wait']);
    // another session of the same server does not see it
    const other = await connectHttp(http.url);
    closers.push(() => other.close());
    await expect(other.client.experimental.tasks.getTask(id)).rejects.toMatchObject({ code: -32602 });
  });
});
