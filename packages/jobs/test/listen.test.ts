/**
 * 2026-07-28: partial output announced on `subscriptions/listen` streams (createMcpHandler's own
 * listen router), through `jobs({ notifyResourceUpdated: (uri) => handler.notify.resourceUpdated(uri) })`.
 * A listener whose `resourceSubscriptions` names the job's URI gets `notifications/resources/updated`;
 * one that names another URI gets none.
 */
import { cancel } from '@mcp-tether/cancel';
import { tether } from '@mcp-tether/core';
import { firstText, until } from '@mcp-tether/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { expect, it } from 'vitest';
import { JobEngine, jobs, MemoryJobStore, taskFront, TASKS_EXTENSION } from '../src/index.js';
import { handleOf, newProbe, registerTools } from './fixtures.js';

it('2026-07-28: resources/updated on the listen stream that subscribed to the job URI, none on another', async () => {
  const probe = newProbe();
  let handler!: ReturnType<typeof createMcpHandler>;
  const j = jobs({
    tools: ['corpus.reindex'],
    inlineMs: 100,
    notifyIntervalMs: 30,
    notifyResourceUpdated: (uri) => handler.notify.resourceUpdated(uri),
  });
  const c = cancel();
  handler = createMcpHandler(
    () =>
      registerTools(tether(new McpServer({ name: 'listen', version: '0.0.0' }), [c, j]) as never, j, probe) as never,
    { onerror: () => {} } as never,
  );
  const auth = { authInfo: { token: 't', clientId: 'alice', scopes: [] } };
  const open = async () => {
    const client = new Client({ name: 'listen-test', version: '0.0.0' }, {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    } as never);
    const updates: string[] = [];
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/resources/updated') updates.push(String(n.params?.uri));
    };
    const fetchFn: typeof fetch = (input, init) =>
      handler.fetch(new Request(input as string | URL, init), auth as never);
    await client.connect(new StreamableHTTPClientTransport(new URL('http://127.0.0.1:1/mcp'), { fetch: fetchFn }));
    return { client, updates };
  };
  const a = await open();
  const b = await open();
  try {
    const first = await a.client.callTool({ name: 'corpus.reindex', arguments: { files: 30, delayMs: 20 } });
    const h = handleOf(first);
    expect(h.status).toBe('working');
    const subA = await a.client.listen({ resourceSubscriptions: [h.partialUri!] });
    const subB = await b.client.listen({ resourceSubscriptions: ['job://someone-else/partial'] });
    expect(subA.honoredFilter.resourceSubscriptions).toEqual([h.partialUri]);
    let done: any;
    for (let i = 0; i < 20; i++) {
      done = await a.client.callTool({ name: 'jobs.status', arguments: { jobId: h.jobId, waitMs: 2_000 } });
      if (handleOf(done).status !== 'working') break;
    }
    expect(firstText(done)).toBe('indexed 30 files');
    await until(() => a.updates.length > 0, 3_000, 'an update on the listen stream');
    expect(a.updates.every((u) => u === h.partialUri)).toBe(true);
    expect(a.updates.length).toBeLessThan(30);
    expect(b.updates).toEqual([]);
    await subA.close();
    await subB.close();
  } finally {
    await a.client.close();
    await b.client.close();
    await handler.close();
  }
});

it('2026-07-28: a task a front made (the tasks extension) announces its partial output on the listen stream too', async () => {
  const probe = newProbe();
  let handler!: ReturnType<typeof createMcpHandler>;
  const engine = new JobEngine({ store: new MemoryJobStore() });
  const j = jobs({
    engine,
    tools: ['corpus.reindex'],
    inlineMs: 100,
    notifyIntervalMs: 30,
    fronts: [taskFront({ engine, taskSupport: { 'corpus.reindex': 'optional' } })],
    notifyResourceUpdated: (uri) => handler.notify.resourceUpdated(uri),
  });
  handler = createMcpHandler(
    () => registerTools(tether(new McpServer({ name: 'listen', version: '0.0.0' }), [j]) as never, j, probe) as never,
    { onerror: () => {} } as never,
  );
  const auth = { authInfo: { token: 't', clientId: 'alice', scopes: [] } };
  const client = new Client({ name: 'listen-task-test', version: '0.0.0' }, {
    capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  const updates: string[] = [];
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === 'notifications/resources/updated') updates.push(String(n.params?.uri));
  };
  // SDK 2.4.0 refuses a resultType "task" result (UNSUPPORTED_RESULT_TYPE): read the task id off the wire.
  const taskIds: string[] = [];
  const fetchFn: typeof fetch = async (input, init) => {
    const res = await handler.fetch(new Request(input as string | URL, init), auth as never);
    if (res.headers.get('content-type')?.includes('application/json')) {
      const body = await res.clone().text();
      const m =
        /"resultType":"task","taskId":"([A-Za-z0-9_-]+)"/.exec(body) ??
        /"taskId":"([A-Za-z0-9_-]+)"[^}]*"resultType":"task"/.exec(body);
      if (m) taskIds.push(m[1]!);
    }
    return res;
  };
  await client.connect(new StreamableHTTPClientTransport(new URL('http://127.0.0.1:1/mcp'), { fetch: fetchFn }));
  try {
    await client.callTool({ name: 'corpus.reindex', arguments: { files: 30, delayMs: 20 } }).catch(() => undefined);
    await until(() => taskIds.length === 1, 3_000, 'the CreateTaskResult');
    const uri = `job://${taskIds[0]}/partial`;
    const sub = await client.listen({ resourceSubscriptions: [uri] });
    const owner = engine.ownerOf({ principal: 'alice', era: 'modern' } as never);
    const done = await engine.wait(taskIds[0]!, owner, { until: 'terminal', timeoutMs: 10_000 });
    expect(done?.status).toBe('completed');
    expect(done?.mode).toBe('task-2026');
    await until(() => updates.length > 0, 3_000, 'an update on the listen stream');
    expect(updates.every((u) => u === uri)).toBe(true);
    expect(updates.length).toBeLessThan(30);
    await sub.close();
  } finally {
    await client.close();
    await handler.close();
    await engine.close(1_000);
  }
});
