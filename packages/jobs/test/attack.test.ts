/**
 * Review attacks: ownership and hostile input on the wire (real SDK clients and servers).
 */
import { cancel } from '@mcp-tether/cancel';
import { tether } from '@mcp-tether/core';
import { connectHttp, serveHttp } from '@mcp-tether/core/testing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { JobEngine } from '../src/engine.js';
import { MemoryJobStore } from '../src/memory.js';
import { jobs } from '../src/index.js';
import { taskFront } from '../src/tasks/index.js';
import { handleOf, newProbe, registerTools } from './fixtures.js';

const KEY = 'io.github.mcp-tether/idempotencyKey';
const TASK_CAPS = { tasks: { requests: { tools: { call: {} } } } } as never;

describe('stateless 2025 HTTP without a principal (SDK 1.x)', () => {
  it('an idempotency key sent by another client does not hand it the first client\'s job', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    const harness = await serveHttp(() => registerTools(tether(new McpServer({ name: 'x', version: '0' }), [cancel(), j]) as never, j, probe) as never, { stateful: false });
    const a = await connectHttp(harness.url);
    const b = await connectHttp(harness.url);
    try {
      const ra = await a.client.request({ method: 'tools/call', params: { name: 'corpus.reindex', arguments: { files: 50, delayMs: 20 }, _meta: { [KEY]: 'nightly' } } }, CallToolResultSchema);
      const rb = await b.client.request({ method: 'tools/call', params: { name: 'corpus.reindex', arguments: { files: 50, delayMs: 20 }, _meta: { [KEY]: 'nightly' } } }, CallToolResultSchema);
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
    const harness = await serveHttp(() => registerTools(tether(new McpServer({ name: 'x', version: '0' }), [cancel(), j]) as never, j, probe) as never, { stateful: false });
    const a = await connectHttp(harness.url, { capabilities: TASK_CAPS });
    const b = await connectHttp(harness.url, { capabilities: TASK_CAPS });
    try {
      const created = await a.client.request({ method: 'tools/call', params: { name: 'corpus.reindex', arguments: { files: 30, delayMs: 20 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
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
