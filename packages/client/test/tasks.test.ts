/**
 * 2025-11-25 tasks against the SDK 1.x server's own experimental task support (registerToolTask +
 * InMemoryTaskStore: a real, bare SDK task server), driven by a v1 and by a v2 client over one
 * in-memory link: created task, tasks/get at the task's pollInterval (fake time), tasks/result,
 * a failed task, and tasks/cancel on abort.
 */
import { firstText, until } from '@mcp-tether/testing';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { isCallAborted, JobError, tetherClient, type TaskInfo } from '../src/index.js';

interface Backend {
  server: McpServer;
  store: InMemoryTaskStore;
  gets: number[];
  cancels: string[];
}

/** A bare SDK 1.x server with a task tool whose work finishes `runMs` after creation (or fails). */
function taskServer(runMs: number, pollInterval: number | undefined, fail = false): Backend {
  const store = new InMemoryTaskStore();
  const server = new McpServer(
    { name: 'tasks', version: '1' },
    { capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore: store },
  );
  const backend: Backend = { server, store, gets: [], cancels: [] };
  server.experimental.tasks.registerToolTask(
    'crunch',
    { inputSchema: { n: z.number() }, execution: { taskSupport: 'required' } },
    {
      createTask: async ({ n }, extra) => {
        const task = await extra.taskStore.createTask({
          ttl: 60_000,
          ...(pollInterval !== undefined && { pollInterval }),
        });
        setTimeout(() => {
          void extra.taskStore
            .storeTaskResult(task.taskId, fail ? 'failed' : 'completed', {
              content: [{ type: 'text', text: fail ? 'crunch failed' : `crunched ${n}` }],
              ...(fail && { isError: true }),
            })
            .catch(() => {});
        }, runMs);
        return { task };
      },
      getTask: async (_args, extra) => (await extra.taskStore.getTask(extra.taskId))!,
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as never,
    },
  );
  // Observe tasks/get and tasks/cancel on the server side (the SDK serves them from its task store; we wrap its handlers).
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, (req: any, extra: any) => unknown> })
    ._requestHandlers;
  const cancel = handlers.get('tasks/cancel')!;
  handlers.set('tasks/cancel', (req, extra) => (backend.cancels.push(req.params.taskId), cancel(req, extra)));
  const get = handlers.get('tasks/get')!;
  handlers.set('tasks/get', (req, extra) => (backend.gets.push(Date.now()), get(req, extra)));
  return backend;
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await close?.();
  close = undefined;
});

async function connect(line: 'v1' | 'v2', backend: Backend) {
  const [a, b] = InMemoryTransport.createLinkedPair();
  await backend.server.connect(b);
  const client =
    line === 'v1'
      ? new ClientV1({ name: 'c', version: '1' }, { capabilities: { tasks: {} } })
      : new ClientV2({ name: 'c', version: '1' }, { capabilities: { tasks: {} } as never });
  await (client as ClientV1).connect(a as never);
  close = async () => {
    await (client as ClientV1).close();
    await backend.server.close();
  };
  return tetherClient(client as never);
}

for (const line of ['v1', 'v2'] as const) {
  describe(`2025-11-25 tasks [client ${line}, SDK 1.x task server]`, () => {
    it('polls tasks/get at the task pollInterval (fake time), then returns tasks/result', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      const backend = taskServer(10_000, 3_000);
      const tc = await connect(line, backend);
      const seen: TaskInfo[] = [];
      const t0 = Date.now();
      const pending = tc.callTask('crunch', { n: 7 }, { onStatus: (t) => seen.push(t) });
      let done = false;
      void pending.finally(() => (done = true)).catch(() => {});
      for (let i = 0; i < 200 && !done; i++) await vi.advanceTimersByTimeAsync(250);
      const r = await pending;
      expect(firstText(r)).toBe('crunched 7');
      // Every 3 s at pollInterval, until the task's notifications/tasks/status (completed at 10 s) wakes the client early.
      expect(backend.gets.map((t) => t - t0)).toEqual([3_000, 6_000, 9_000, 10_000]);
      expect(seen.map((t) => t.status)).toEqual(['working', 'working', 'working', 'working', 'completed']);
      expect(seen[0]).toMatchObject({ era: '2025-11-25', pollIntervalMs: 3_000, ttlMs: 60_000 });
    });

    it('the SDK store fills pollInterval 1 000 when the tool gives none: polls every 1 s (fake time)', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      const backend = taskServer(14_000, undefined);
      const tc = await connect(line, backend);
      const t0 = Date.now();
      const pending = tc.callTask('crunch', { n: 1 });
      let done = false;
      void pending.finally(() => (done = true)).catch(() => {});
      for (let i = 0; i < 200 && !done; i++) await vi.advanceTimersByTimeAsync(250);
      await pending;
      const times = backend.gets.map((t) => t - t0);
      expect(times.map((t, i) => t - (i ? times[i - 1]! : 0))).toEqual(Array(14).fill(1_000));
    });

    it('a failed task returns its isError result (what the call would have returned)', async () => {
      const backend = taskServer(20, 50, true);
      const tc = await connect(line, backend);
      const r = await tc.callTask('crunch', { n: 1 }, { minPollMs: 50 });
      expect(r.isError).toBe(true);
      expect(firstText(r)).toBe('crunch failed');
    });

    it('maxTotalMs caps the whole follow: at 5 s the client sends tasks/cancel and stops polling (fake time)', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      const backend = taskServer(600_000, 1_000);
      const tc = await connect(line, backend);
      let id: string | undefined;
      const pending = tc.callTask('crunch', { n: 1 }, { maxTotalMs: 5_000, onStatus: (t) => (id ??= t.taskId) });
      let settled = false;
      const outcome = pending.then(
        () => 'resolved',
        (e) => e,
      );
      void outcome.finally(() => (settled = true));
      for (let i = 0; i < 200 && !settled; i++) await vi.advanceTimersByTimeAsync(250);
      const err = await outcome;
      expect(isCallAborted(err)).toBe(true);
      expect(err.kind).toBe('total');
      expect(err.message).toBe(`task ${id}: exceeded the total cap of 5000 ms; tasks/cancel sent`);
      expect(backend.cancels).toEqual([id]);
      const gets = backend.gets.length;
      await vi.advanceTimersByTimeAsync(30_000);
      expect(backend.gets.length).toBe(gets);
    });

    it('aborting sends tasks/cancel for the task', async () => {
      const backend = taskServer(60_000, 50);
      const tc = await connect(line, backend);
      const ac = new AbortController();
      let id: string | undefined;
      const pending = tc.callTask(
        'crunch',
        { n: 1 },
        { signal: ac.signal, minPollMs: 50, onStatus: (t) => (id ??= t.taskId) },
      );
      await until(() => backend.gets.length >= 1, 5_000, 'a first tasks/get');
      ac.abort('enough');
      const err = await pending.catch((e) => e);
      expect(isCallAborted(err)).toBe(true);
      expect(err.message).toBe(`task ${id}: cancelled (enough); tasks/cancel sent`);
      await until(() => backend.cancels.length === 1, 5_000, 'tasks/cancel on the server');
      expect(backend.cancels).toEqual([id]);
      expect((await backend.store.getTask(id!))?.status).toBe('cancelled');
    });
  });
}

it('JobError is exported for task failures by protocol error', () => {
  expect(new JobError('x', 't', 'failed').name).toBe('JobError');
});
