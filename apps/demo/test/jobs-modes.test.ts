/**
 * corpus.reindex in all three modes against the real demo server (`tether-demo --port 0
 * --inline-ms 300`, a child process on 127.0.0.1), each client getting its own mode on the wire:
 * - a 2025-11-25 task-capable client (SDK 1.x `client.experimental.tasks.callToolStream` with `task`);
 * - a 2026-07-28 client that declares the tasks extension (SDK 2.x, pinned);
 * - plain clients of both eras: a job handle followed with `jobs.status`.
 * And (in process) 2026-07-28 partial-output updates on `subscriptions/listen` when the stack has a notifier.
 * Every run is longer than the inline window: a task must end with the tool's result, never a handle.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tetherClient } from '@mcp-tether/client';
import { until } from '@mcp-tether/testing';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoApp } from '../src/server.js';
import { textOf } from './helpers.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
let child: ChildProcess;
let url: URL;

beforeAll(async () => {
  child = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), bin, '--port', '0', '--quiet', '--inline-ms', '300'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  url = await new Promise<URL>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo did not start: ${err}`)), 90_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(new URL(m[1]!));
      }
    });
    child.once('exit', (code) => reject(new Error(`the demo exited (${code}): ${err}`)));
  });
}, 30_000);

afterAll(async () => {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
});

const ARGS = { files: 30, delayMs: 30 }; // ~0.9 s: well past --inline-ms 300

async function v1(capabilities: Record<string, unknown> = {}) {
  const client = new Client({ name: 'modes-v1', version: '0' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

async function v2(capabilities: Record<string, unknown> = {}) {
  const client = new ClientV2({ name: 'modes-v2', version: '0' }, {
    capabilities,
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  await client.connect(new HttpV2(url));
  return client;
}

describe('demo: corpus.reindex in every mode (real demo server over HTTP)', () => {
  it('tools/list: corpus.reindex with execution.taskSupport "optional" (2025-11-25), the tasks capability, and the 2026 extension in server/discover', async () => {
    const client = await v1();
    try {
      const { tools } = await client.listTools();
      const reindex = tools.find((t) => t.name === 'corpus.reindex') as
        | { execution?: { taskSupport?: string } }
        | undefined;
      expect(reindex?.execution?.taskSupport).toBe('optional');
      expect(client.getServerCapabilities()?.tasks).toMatchObject({ requests: { tools: { call: {} } } });
      // 8 demo tools + corpus.reindex, jobs.status, jobs.cancel (README "Tools")
      expect(tools).toHaveLength(11);
    } finally {
      await client.close();
    }
    const modern = await v2();
    try {
      expect(
        (modern.getServerCapabilities() as { extensions?: Record<string, unknown> } | undefined)?.extensions?.[TASKS],
      ).toBeDefined();
    } finally {
      await modern.close();
    }
  });

  it('2025-11-25 task-capable client (SDK 1.x callToolStream with task): a task, its status, then the tool result', async () => {
    const client = await v1({ tasks: {} });
    try {
      const kinds: string[] = [];
      let taskId: string | undefined;
      let result: any;
      for await (const m of client.experimental.tasks.callToolStream(
        { name: 'corpus.reindex', arguments: ARGS },
        CallToolResultSchema,
        { task: { ttl: 60_000 } },
      )) {
        kinds.push(m.type);
        if (m.type === 'taskCreated') taskId = m.task.taskId;
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') throw m.error;
      }
      expect(kinds[0]).toBe('taskCreated');
      expect(kinds.at(-1)).toBe('result');
      expect(taskId).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(textOf(result)).toBe('Reindexed 30 documents.');
      expect(result.structuredContent).toBeUndefined(); // not a job handle
      const task = await client.experimental.tasks.getTask(taskId!);
      expect(task.status).toBe('completed');
      // the indexed file list grew as the task's partial output
      const partial = await client.readResource({ uri: `job://${taskId}/partial` });
      expect((partial.contents[0] as { text: string }).text.split('\n').filter(Boolean)).toHaveLength(30);
    } finally {
      await client.close();
    }
  }, 30_000);

  it('2026-07-28 client that declares the tasks extension: a task (resultType "task"), tasks/get to completed with the tool result', async () => {
    const client = await v2({ extensions: { [TASKS]: {} } });
    try {
      const tc = tetherClient(client as never, { timeoutMs: 10_000 });
      const statuses: string[] = [];
      const r = await tc.callTask('corpus.reindex', ARGS, { onStatus: (t) => statuses.push(`${t.era}:${t.status}`) });
      expect(statuses[0]).toBe('2026:working');
      expect(statuses.at(-1)).toBe('2026:completed');
      expect(textOf(r)).toBe('Reindexed 30 documents.');
      expect((r as { structuredContent?: unknown }).structuredContent).toBeUndefined();
    } finally {
      await client.close();
    }
  }, 30_000);

  it('plain 2025 client (no params.task): a job handle, followed with jobs.status to the result', async () => {
    const client = await v1();
    try {
      const first = await client.callTool({ name: 'corpus.reindex', arguments: ARGS });
      const h = first.structuredContent as { jobId: string; status: string; pollAfterMs: number };
      expect(h.status).toBe('working');
      expect(h.pollAfterMs).toBe(1000);
      let r: any = first;
      for (let i = 0; i < 20 && r.structuredContent.status === 'working'; i++)
        r = await client.callTool({ name: 'jobs.status', arguments: { jobId: h.jobId, waitMs: 3_000 } });
      expect(r.structuredContent.status).toBe('completed');
      expect(textOf(r)).toBe('Reindexed 30 documents.');
    } finally {
      await client.close();
    }
  }, 30_000);

  it('plain 2026-07-28 client (no tasks extension): a job handle, followed with jobs.status to the result', async () => {
    const client = await v2();
    try {
      const first: any = await client.callTool({ name: 'corpus.reindex', arguments: ARGS });
      const h = first.structuredContent as { jobId: string; status: string };
      expect(h.status).toBe('working');
      let r: any = first;
      for (let i = 0; i < 20 && r.structuredContent.status === 'working'; i++)
        r = await client.callTool({ name: 'jobs.status', arguments: { jobId: h.jobId, waitMs: 3_000 } });
      expect(r.structuredContent.status).toBe('completed');
      expect(textOf(r)).toBe('Reindexed 30 documents.');
    } finally {
      await client.close();
    }
  }, 30_000);
});

/**
 * 2026-07-28 partial-output updates: the demo's stack announces them through
 * `createDemoApp({ notifyResourceUpdated })`. The demo's HTTP front (`@mcp-tether/http`) does not
 * expose its `createMcpHandler` notifier yet, so here the demo's own 2026 servers are served by a
 * `createMcpHandler` of the test, whose `notify.resourceUpdated` is that option.
 */
it('2026-07-28: with a notifier, a subscriptions/listen stream naming a job (handle mode) or a task partial URI gets resources/updated', async () => {
  let handler!: ReturnType<typeof createMcpHandler>;
  const app = createDemoApp({ inlineMs: 300, notifyResourceUpdated: (uri) => handler.notify.resourceUpdated(uri) });
  handler = createMcpHandler(() => app.createModernServer() as never, { onerror: () => {} } as never);
  const auth = { authInfo: { token: 't', clientId: 'demo-user', scopes: [] } };
  const taskIds: string[] = [];
  // SDK 2.4.0 refuses a resultType "task" result (UNSUPPORTED_RESULT_TYPE): read the task id off the wire.
  const fetchFn: typeof fetch = async (input, init) => {
    const res = await handler.fetch(new Request(input as string | URL, init), auth as never);
    // JSON or SSE: the tools/call response body ends with the call (never read a listen stream here).
    if (typeof init?.body === 'string' && init.body.includes('"method":"tools/call"')) {
      void res
        .clone()
        .text()
        .then((body) => {
          const m = /"resultType":"task","taskId":"([A-Za-z0-9_-]+)"/.exec(body);
          if (m) taskIds.push(m[1]!);
        });
    }
    return res;
  };
  const open = async (capabilities: Record<string, unknown>) => {
    const client = new ClientV2({ name: 'modes-listen', version: '0' }, {
      capabilities,
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    } as never);
    const updates: string[] = [];
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/resources/updated') updates.push(String(n.params?.uri));
    };
    await client.connect(new HttpV2(new URL('http://127.0.0.1:1/mcp'), { fetch: fetchFn }));
    return { client, updates };
  };
  const plain = await open({});
  const tasking = await open({ extensions: { [TASKS]: {} } });
  // tetherClient takes over the client's resources/updated handler: the task is started and followed on a client of its own.
  const runner = await open({ extensions: { [TASKS]: {} } });
  try {
    // handle mode
    const first: any = await plain.client.callTool({ name: 'corpus.reindex', arguments: ARGS });
    const h = first.structuredContent as { jobId: string; partialUri: string };
    const sub = await plain.client.listen({ resourceSubscriptions: [h.partialUri] });
    let r: any = first;
    for (let i = 0; i < 20 && r.structuredContent.status === 'working'; i++)
      r = await plain.client.callTool({ name: 'jobs.status', arguments: { jobId: h.jobId, waitMs: 3_000 } });
    expect(textOf(r)).toBe('Reindexed 30 documents.');
    await until(() => plain.updates.length > 0, 5_000, 'resources/updated for the job');
    expect(plain.updates.every((u) => u === h.partialUri)).toBe(true);
    await sub.close();
    // a 2026 task
    const tc = tetherClient(runner.client as never, { timeoutMs: 10_000 });
    const done = tc.callTask('corpus.reindex', ARGS);
    await until(() => taskIds.length === 1, 5_000, 'the CreateTaskResult');
    const uri = `job://${taskIds[0]}/partial`;
    const taskSub = await tasking.client.listen({ resourceSubscriptions: [uri] });
    expect(textOf(await done)).toBe('Reindexed 30 documents.');
    await until(() => tasking.updates.length > 0, 5_000, 'resources/updated for the task');
    expect(tasking.updates.every((u) => u === uri)).toBe(true);
    await taskSub.close();
  } finally {
    await plain.client.close();
    await tasking.client.close();
    await runner.client.close();
    await handler.close();
    await app.stack.drain(1_000);
  }
}, 30_000);
