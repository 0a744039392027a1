/**
 * Review attacks: ownership and hostile input on the wire (real SDK clients and servers).
 */
import { cancel } from '@mcp-tether/cancel';
import { tether } from '@mcp-tether/core';
import { connect, connectHttp, pause, serveHttp } from '@mcp-tether/testing';
import { describeEachSdk } from '@mcp-tether/testing/matrix';
import { mrtr } from '@mcp-tether/mrtr';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { JobEngine } from '../src/engine.js';
import { MemoryJobStore } from '../src/memory.js';
import { jobs, newJobId } from '../src/index.js';
import { taskFront } from '../src/tasks/index.js';
import { as, build, handleOf, newProbe, registerTools } from './fixtures.js';

const KEY = 'io.github.mcp-tether/idempotencyKey';
const TASK_CAPS = { tasks: { requests: { tools: { call: {} } } } } as never;

describe('stateless 2025 HTTP without a principal (SDK 1.x)', () => {
  it("an idempotency key sent by another client does not hand it the first client's job", async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    const harness = await serveHttp(
      () =>
        registerTools(tether(new McpServer({ name: 'x', version: '0' }), [cancel(), j]) as never, j, probe) as never,
      { stateful: false },
    );
    const a = await connectHttp(harness.url);
    const b = await connectHttp(harness.url);
    try {
      const ra = await a.client.request(
        {
          method: 'tools/call',
          params: { name: 'corpus.reindex', arguments: { files: 50, delayMs: 20 }, _meta: { [KEY]: 'nightly' } },
        },
        CallToolResultSchema,
      );
      const rb = await b.client.request(
        {
          method: 'tools/call',
          params: { name: 'corpus.reindex', arguments: { files: 50, delayMs: 20 }, _meta: { [KEY]: 'nightly' } },
        },
        CallToolResultSchema,
      );
      const ha = handleOf(ra);
      const hb = handleOf(rb);
      expect(ha.status).toBe('working');
      expect(hb.jobId).not.toBe(ha.jobId);
      await a.callTool('jobs.cancel', { jobId: ha.jobId });
      await b.callTool('jobs.cancel', { jobId: hb.jobId });
    } finally {
      await a.close();
      await b.close();
      await harness.close();
    }
  });

  it('tasks: a task is followed across requests, and tasks/list does not show one client the tasks of another', async () => {
    const engine = new JobEngine({ store: new MemoryJobStore() });
    const probe = newProbe();
    const j = jobs({ engine, fronts: [taskFront({ engine, taskSupport: { 'corpus.reindex': 'optional' } })] });
    const harness = await serveHttp(
      () =>
        registerTools(tether(new McpServer({ name: 'x', version: '0' }), [cancel(), j]) as never, j, probe) as never,
      { stateful: false },
    );
    const a = await connectHttp(harness.url, { capabilities: TASK_CAPS });
    const b = await connectHttp(harness.url, { capabilities: TASK_CAPS });
    try {
      const created = await a.client.request(
        {
          method: 'tools/call',
          params: { name: 'corpus.reindex', arguments: { files: 30, delayMs: 20 }, task: { ttl: 60_000 } },
        },
        CreateTaskResultSchema,
      );
      const taskId = created.task.taskId;
      // the creator can follow its task on the next request (a fresh server)
      const got = await a.client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
      expect(got.taskId).toBe(taskId);
      const listed = await b.client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema).then(
        (r) => r.tasks.map((t) => t.taskId),
        () => [] as string[],
      );
      expect(listed).not.toContain(taskId);
      await a.client.request({ method: 'tasks/cancel', params: { taskId } }, GetTaskResultSchema);
    } finally {
      await a.close();
      await b.close();
      await harness.close();
    }
  });
});

/** A memory store whose next write of status `working` (the runner resuming a job after its answers) waits for `gate.wait`. */
class SlowResumeStore extends MemoryJobStore {
  gate: { reached: () => void; wait: Promise<void> } | undefined;
  override async update(id: string, patch: Parameters<MemoryJobStore['update']>[1]) {
    const g = this.gate;
    if (g !== undefined && patch.status === 'working') {
      this.gate = undefined;
      g.reached();
      await g.wait;
    }
    return super.update(id, patch);
  }
}

describeEachSdk('jobs: a job cancelled while its answers are being taken', (sdk) => {
  it('the handler does not run again after the cancel', async () => {
    const store = new SlowResumeStore({ sweepIntervalMs: 0 });
    const probe = newProbe();
    const engine = new JobEngine({ store, progressWriteMs: 0 });
    const j = jobs({ engine, tools: ['deploy'], inlineMs: 2_000 });
    const kit = await sdk.connect(() => build(sdk, [cancel(), mrtr(), j], j, probe), as(sdk, 'alice'));
    try {
      const h = handleOf(await kit.callTool('deploy', { target: 'prod' }));
      expect(h.status).toBe('input_required');
      expect(probe.started.length).toBe(1);
      let release!: () => void;
      const reached = new Promise<void>((resolve) => {
        store.gate = { reached: resolve, wait: new Promise<void>((r) => (release = r)) };
      });
      const answering = kit.callTool('jobs.status', {
        jobId: h.jobId,
        inputResponses: { 'confirm+note': { action: 'accept', content: { confirm: true } } },
      });
      await reached; // the answers reached the runner; it is writing `working`
      expect(handleOf(await kit.callTool('jobs.cancel', { jobId: h.jobId })).status).toBe('cancelled');
      release();
      await answering;
      await pause(300);
      expect(probe.started.length).toBe(1); // the handler did not run a second round after the cancel
      expect(probe.results).toEqual([]);
    } finally {
      await kit.close();
    }
  });
});

describeEachSdk('jobs: 1 000 quick status polls', (sdk) => {
  it('leave no listener or timer behind', async () => {
    const store = new MemoryJobStore({ sweepIntervalMs: 0 });
    const probe = newProbe();
    const engine = new JobEngine({ store, progressWriteMs: 0 });
    const j = jobs({ engine, tools: ['corpus.reindex'], inlineMs: 50 });
    const kit = await sdk.connect(() => build(sdk, [cancel(), j], j, probe), as(sdk, 'alice'));
    try {
      // 100 s of work (cancelled at the end): still working after 1 000 polls on a loaded machine
      const h = handleOf(await kit.callTool('corpus.reindex', { files: 10, delayMs: 10_000 }));
      expect(h.status).toBe('working');
      const listeners = () =>
        (store as unknown as { listeners: Map<string, Set<unknown>> }).listeners.get(h.jobId)?.size ?? 0;
      const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      const before = { listeners: listeners(), timers: timers() };
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all(
          Array.from({ length: 100 }, (_, i) =>
            kit.callTool('jobs.status', { jobId: h.jobId, ...(i % 2 ? { waitMs: 5 } : {}) }),
          ),
        );
        expect(answers.every((a) => handleOf(a).status === 'working')).toBe(true);
      }
      const last = handleOf(await kit.callTool('jobs.status', { jobId: h.jobId }));
      expect(last.pollAfterMs).toBe(15_000);
      expect(listeners()).toBe(before.listeners);
      expect(timers()).toBeLessThanOrEqual(before.timers + 2);
      await kit.callTool('jobs.cancel', { jobId: h.jobId });
    } finally {
      await kit.close();
    }
  }, 120_000); // 1 000 requests: ~3 s idle, over 20 s on a loaded 2-core machine
});

/** A memory store whose `get` rejects while `failing` (a shared store that is briefly unreachable). */
class FlakyStore extends MemoryJobStore {
  failing = false;
  override async get(id: string, owner: string) {
    if (this.failing) throw new Error('store unreachable');
    return super.get(id, owner);
  }
}

describeEachSdk(
  'jobs: resources/subscribe while the store fails',
  (sdk) => {
    it('a failed subscribe leaves nothing behind: the retry subscribes for real and gets the updates', async () => {
      const store = new FlakyStore({ sweepIntervalMs: 0 });
      const probe = newProbe();
      const engine = new JobEngine({ store, progressWriteMs: 0, onError: () => {} });
      const j = jobs({ engine, tools: ['corpus.reindex'], inlineMs: 50, notifyIntervalMs: 20 });
      const kit = await sdk.connect(() => build(sdk, [cancel(), j], j, probe), as(sdk, 'alice'));
      try {
        const h = handleOf(await kit.callTool('corpus.reindex', { files: 200, delayMs: 30 }));
        expect(h.status).toBe('working');
        const listeners = () =>
          (store as unknown as { listeners: Map<string, Set<unknown>> }).listeners.get(h.jobId)?.size ?? 0;
        const before = listeners();
        const client = (kit as unknown as { client: { subscribeResource(p: { uri: string }): Promise<unknown> } })
          .client;
        store.failing = true;
        await expect(client.subscribeResource({ uri: h.partialUri! })).rejects.toThrow();
        store.failing = false;
        expect(listeners()).toBe(before); // the failed subscription's listener is gone
        await client.subscribeResource({ uri: h.partialUri! });
        await kit.wire.waitFor(
          (m) => m.message.method === 'notifications/resources/updated' && m.message.params?.uri === h.partialUri,
          5_000,
        );
        await kit.callTool('jobs.cancel', { jobId: h.jobId });
      } finally {
        await kit.close();
      }
    });
  },
  { only: ['v1', 'v2-legacy'] as const },
);

describeEachSdk("jobs: another owner's job id answers exactly as an unknown one", (sdk) => {
  it('jobs.status, jobs.cancel, resources/read: same code, same text (id aside)', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    const c = cancel();
    const a = await sdk.connect(() => build(sdk, [c, j], j, probe), as(sdk, 'alice'));
    const b = await sdk.connect(() => build(sdk, [c, j], j, probe), as(sdk, 'bob'));
    try {
      const h = handleOf(await a.callTool('corpus.reindex', { files: 1, delayMs: 10_000 }));
      expect(h.status).toBe('working');
      const unknown = newJobId();
      const same = (x: unknown, id: string) => JSON.stringify(x).split(id).join('<id>');
      const client = (k: unknown) => (k as { client: { readResource(p: { uri: string }): Promise<unknown> } }).client;
      for (const [tool, args] of [
        ['jobs.status', {}],
        ['jobs.status', { waitMs: 50 }],
        ['jobs.status', { inputResponses: { k: { action: 'accept' } } }],
        ['jobs.cancel', {}],
      ] as const) {
        const foreign = await b.callTool(tool, { jobId: h.jobId, ...args });
        const none = await b.callTool(tool, { jobId: unknown, ...args });
        expect(foreign.structuredContent, tool).toMatchObject({ code: 'JOB_NOT_FOUND' });
        expect(same(foreign, h.jobId), tool).toBe(same(none, unknown));
      }
      const err = (p: Promise<unknown>) =>
        p.then(
          () => 'resolved',
          (e: { code?: number; message?: string }) => ({ code: e.code, message: e.message }),
        );
      const rf = await err(client(b).readResource({ uri: `job://${h.jobId}/partial` }));
      const ru = await err(client(b).readResource({ uri: `job://${unknown}/partial` }));
      expect(rf).not.toBe('resolved');
      expect(same(rf, h.jobId)).toBe(same(ru, unknown));
      // untouched: still A's, still running
      expect(handleOf(await a.callTool('jobs.status', { jobId: h.jobId })).status).toBe('working');
      await a.callTool('jobs.cancel', { jobId: h.jobId });
    } finally {
      await a.close();
      await b.close();
    }
  });
});

/** A memory store that runs `beforeSignal` before delivering a signal (to let a job finish first: a cancel racing completion). */
class RacingStore extends MemoryJobStore {
  beforeSignal: (() => Promise<void>) | undefined;
  override async signal(id: string, owner: string, signal: Parameters<MemoryJobStore['signal']>[2]) {
    const hook = this.beforeSignal;
    this.beforeSignal = undefined;
    if (hook !== undefined) await hook();
    return super.signal(id, owner, signal);
  }
}

describe('2025-11-25 tasks/cancel racing completion (SDK 1.x)', () => {
  it('a task that completed before the cancel took effect gets -32602, never a cancel answer with status completed', async () => {
    const store = new RacingStore({ sweepIntervalMs: 0 });
    const engine = new JobEngine({ store, progressWriteMs: 0 });
    const probe = newProbe();
    const j = jobs({ engine, fronts: [taskFront({ engine, taskSupport: { 'corpus.reindex': 'optional' } })] });
    const server = registerTools(tether(new McpServer({ name: 'x', version: '0' }), [cancel(), j]) as never, j, probe);
    const kit = await connect(server as never, { capabilities: TASK_CAPS, sessionId: 'race' });
    try {
      const created = await kit.client.request(
        {
          method: 'tools/call',
          params: { name: 'corpus.reindex', arguments: { files: 3, delayMs: 100 }, task: { ttl: 60_000 } },
        },
        CreateTaskResultSchema,
      );
      const taskId = created.task.taskId;
      store.beforeSignal = async () => {
        // the job finishes before the cancel reaches it
        for (let i = 0; i < 200 && (await store.get(taskId, `s:race`))?.status !== 'completed'; i++) await pause(10);
      };
      const answer = await kit.client.request({ method: 'tasks/cancel', params: { taskId } }, GetTaskResultSchema).then(
        (r) => ({ status: r.status }),
        (e: { code?: number }) => ({ code: e.code }),
      );
      expect((await store.get(taskId, 's:race'))?.status).toBe('completed');
      expect(answer).toEqual({ code: -32602 });
    } finally {
      await kit.close();
    }
  });
});

describeEachSdk('jobs: partial-output URIs with odd offsets', (sdk) => {
  it('negative, fractional, non-numeric, huge: a clear -32602 about the offset; a large offset reads nothing new', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    const kit = await sdk.connect(() => build(sdk, [cancel(), j], j, probe), as(sdk, 'alice'));
    try {
      const h = handleOf(await kit.callTool('corpus.reindex', { files: 1_000, delayMs: 20 }));
      const client = (
        kit as unknown as {
          client: { readResource(p: { uri: string }): Promise<{ contents: Array<{ text: string; _meta: any }> }> };
        }
      ).client;
      for (const q of ['-1', '1.5', 'abc', '9999999999999', '']) {
        const e = await client.readResource({ uri: `${h.partialUri}?offset=${q}` }).then(
          () => undefined,
          (err: { code?: number; message?: string }) => err,
        );
        expect(e?.code, q).toBe(-32602);
        expect(e?.message, q).toMatch(/offset=N/);
      }
      const far = await client.readResource({ uri: `${h.partialUri}?offset=999999` });
      expect(far.contents[0]!.text).toBe('');
      expect(far.contents[0]!._meta['io.github.mcp-tether/partial'].next).toBeLessThan(1_000);
      await kit.callTool('jobs.cancel', { jobId: h.jobId });
    } finally {
      await kit.close();
    }
  });
});

describeEachSdk(
  '2026-07-28 without a principal',
  (sdk) => {
    it("an idempotency key sent by another client does not hand it the first client's job", async () => {
      const probe = newProbe();
      const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
      const c = cancel();
      const a = await sdk.connect(() => build(sdk, [c, j], j, probe));
      const b = await sdk.connect(() => build(sdk, [c, j], j, probe));
      try {
        const start = (k: typeof a) =>
          (k as unknown as { callTool(n: string, args: object, o: object): Promise<unknown> }).callTool(
            'corpus.reindex',
            { files: 50, delayMs: 20 },
            { meta: { [KEY]: 'nightly' } },
          );
        const ha = handleOf(await start(a));
        const hb = handleOf(await start(b));
        expect(ha.status).toBe('working');
        expect(hb.jobId).not.toBe(ha.jobId);
        await a.callTool('jobs.cancel', { jobId: ha.jobId });
        await b.callTool('jobs.cancel', { jobId: hb.jobId });
      } finally {
        await a.close();
        await b.close();
      }
    });
  },
  { only: ['v2-modern'] as const },
);
