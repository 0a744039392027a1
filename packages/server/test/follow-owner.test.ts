/**
 * Who may follow a job (issue 23): with no principal, the owner is the client key, over
 * `@mcp-tether/http` the remote address. A job handle (and a 2025 task) started in one session is
 * followed from a NEW session of the same address (the Inspector CLI opens one per call); from
 * another address (127.0.0.2: Linux routes 127.0.0.0/8 to loopback) it is an unknown id.
 * Real HTTP: SDK 1.x clients, and raw 2026-07-28 requests (each its own connection).
 */
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema, GetTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import { onePage } from './fixtures/app.js';
import { raw26, textOf } from './helpers.js';

process.env.SECOND_MS = '300';

/** A `fetch` whose connections leave from `localAddress` (another client address on loopback). */
function fetchFrom(localAddress: string) {
  return (input: string | URL, init?: RequestInit): Promise<Response> =>
    new Promise((resolve, reject) => {
      const headers = Object.fromEntries(new Headers(init?.headers).entries());
      const req = httpRequest(
        new URL(String(input)),
        { method: init?.method ?? 'GET', headers, localAddress, ...(init?.signal && { signal: init.signal }) },
        (res) => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers))
            if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
          const status = res.statusCode ?? 500;
          const empty = status === 204 || status === 205 || status === 304;
          resolve(new Response(empty ? null : (Readable.toWeb(res) as ReadableStream), { status, headers: h }));
        },
      );
      req.on('error', reject);
      req.end(typeof init?.body === 'string' ? init.body : undefined);
    });
}

async function session(url: URL, localAddress = '127.0.0.1') {
  const client = new Client({ name: 'follow-test', version: '0' });
  await client.connect(new StreamableHTTPClientTransport(url, { fetch: fetchFrom(localAddress) }));
  return client;
}

describe('a job is followed by its client from a new connection, by nobody else', () => {
  let app: App;
  let url: URL;
  beforeAll(async () => {
    ({ app } = onePage({ handleSignals: false, log: false, inlineMs: 300 }));
    ({ url } = await app.listen(0));
  });
  afterAll(() => app.shutdown(1_000));

  it('job handle: jobs.status from a new session of the same address; JOB_NOT_FOUND from another address', async () => {
    const starter = await session(url);
    const first = await starter.callTool({ name: 'reindex', arguments: { seconds: 3 } });
    const handle = first.structuredContent as { jobId: string; status: string };
    expect(handle.status).toBe('working');
    await starter.close();

    const stranger = await session(url, '127.0.0.2');
    try {
      const s = await stranger.callTool({ name: 'jobs.status', arguments: { jobId: handle.jobId } });
      expect(s.structuredContent).toMatchObject({ code: 'JOB_NOT_FOUND' });
    } finally {
      await stranger.close();
    }

    let done: any;
    for (let polls = 0; polls < 20 && done === undefined; polls++) {
      const again = await session(url); // a new connection per call, as the Inspector CLI does
      try {
        const s = await again.callTool({ name: 'jobs.status', arguments: { jobId: handle.jobId, waitMs: 5_000 } });
        expect((s.structuredContent as { code?: string }).code).toBeUndefined();
        if ((s.structuredContent as { status: string }).status === 'completed') done = s;
      } finally {
        await again.close();
      }
    }
    expect(textOf(done)).toBe('Reindexed for 3 seconds.');
  });

  it('2025 task: tasks/get from a new session of the same address; unknown task from another address', async () => {
    const starter = await session(url);
    const created = await starter.request(
      { method: 'tools/call', params: { name: 'reindex', arguments: { seconds: 2 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    await starter.close();

    const stranger = await session(url, '127.0.0.2');
    try {
      await expect(stranger.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema)).rejects.toThrow(
        /not found|unknown/i,
      );
    } finally {
      await stranger.close();
    }

    let status = 'working';
    for (let polls = 0; polls < 100 && status === 'working'; polls++) {
      const again = await session(url);
      try {
        status = (await again.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema)).status;
        // no principal: the id is the only key, nothing is listed (an address may be many clients)
        if (polls === 0)
          expect((await again.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema)).tasks).toEqual([]);
      } finally {
        await again.close();
      }
      if (status === 'working') await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe('completed');
  });

  it('2026 task: tasks/get from another request of the same address; unknown task from another address', async () => {
    const tasks = {
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    };
    const from = (address: string) => fetchFrom(address) as (url: URL, init: RequestInit) => Promise<Response>;
    const created = await raw26(
      url,
      'tools/call',
      { name: 'reindex', arguments: { seconds: 2 } },
      tasks,
      from('127.0.0.1'),
    );
    expect(created.response?.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.response!.result.taskId as string;

    const stranger = await raw26(url, 'tasks/get', { taskId }, tasks, from('127.0.0.2'));
    expect(stranger.response?.error?.message).toMatch(/not found/i);

    let task: Record<string, any> | undefined;
    for (let polls = 0; polls < 100 && (task === undefined || task.status === 'working'); polls++) {
      if (polls > 0) await new Promise((r) => setTimeout(r, 100));
      const got = await raw26(url, 'tasks/get', { taskId }, tasks, from('127.0.0.1'));
      expect(got.response?.error).toBeUndefined();
      task = got.response?.result;
    }
    expect(task).toMatchObject({ status: 'completed' });
    expect(textOf(task!.result)).toBe('Reindexed for 2 seconds.');
  });
});
