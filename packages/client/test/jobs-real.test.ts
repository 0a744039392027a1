/**
 * Against the real `@mcp-tether/jobs` (its `jobs()` middleware, `JobEngine` and task fronts), on
 * every SDK line and era: `corpus.reindex` as a job handle followed by `callJob` (status, progress,
 * partial output polled and by subscription, cancel reaching the job), and as an MCP task followed
 * by `callTask` (2025-11-25 on legacy sessions, the 2026 tasks extension on 2026-07-28).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { cancel } from '@mcp-tether/cancel';
import { handler, progressEvent } from '@mcp-tether/core';
import { firstText, until } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer, type MatrixClient, type SdkTarget } from '@mcp-tether/testing/matrix';
import { JobEngine, jobs, MemoryJobStore, taskFront, TASKS_EXTENSION, type JobsMiddleware } from '@mcp-tether/jobs';
import { ask, mrtr, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { progressMiddleware } from '@mcp-tether/progress';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { isCallAborted, tetherClient, type JobHandle, type TaskInfo } from '../src/index.js';

interface Seen {
  aborted: string[];
  finished: number;
}

function serverFor(sdk: SdkTarget, j: JobsMiddleware, seen: Seen, errors: unknown[]) {
  const { server } = tetheredServer(sdk, [cancel(), progressMiddleware({ minIntervalMs: 0 }), mrtr(), j], errors);
  j.registerTools(server as never);
  server.registerTool(
    'corpus.reindex',
    { inputSchema: { files: z.number().int(), delayMs: z.number().int() }, annotations: { destructiveHint: true } },
    handler(async function* (args: { files: number; delayMs: number }, ctx) {
      ctx.signal.addEventListener('abort', () => seen.aborted.push(String((ctx.signal.reason as Error)?.message)), {
        once: true,
      });
      for (let done = 1; done <= args.files; done++) {
        await delay(args.delayMs, undefined, { signal: ctx.signal });
        await ctx.job?.append(`doc-${done}.md\n`);
        yield progressEvent(done, args.files, `doc-${done}.md`);
      }
      seen.finished++;
      return { content: [{ type: 'text' as const, text: `indexed ${args.files} files` }] };
    }) as never,
  );
  const fields = { confirm: ask.boolean('Drop the old index first?') };
  server.registerTool(
    'corpus.rebuild',
    { inputSchema: { delayMs: z.number().int() }, annotations: { destructiveHint: true } },
    handler(async (args: { delayMs: number }, ctx) => {
      await delay(args.delayMs, undefined, { signal: ctx.signal }); // long enough to become a job first
      const answer = readInputResult(fields);
      if (!answer) return requireInput.elicit('Drop the old index first?', fields);
      return {
        content: [
          {
            type: 'text' as const,
            text: answer.action === 'accept' && answer.content.confirm ? 'rebuilt from scratch' : 'rebuilt in place',
          },
        ],
      };
    }) as never,
  );
  return server;
}

const docs = (n: number) => Array.from({ length: n }, (_, i) => `doc-${i + 1}.md\n`).join('');
const authFor = (sdk: SdkTarget) =>
  sdk.era === 'modern' ? { authInfo: { token: 'token-alice', clientId: 'alice', scopes: [] } } : {};

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describeEachSdk('with @mcp-tether/jobs: job handles', (sdk) => {
  it('callJob follows corpus.reindex to its result: handle, status, progress, partial output', async () => {
    const seen: Seen = { aborted: [], finished: 0 };
    const errors: unknown[] = [];
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 100, notifyIntervalMs: 20 });
    kit = await sdk.connect(() => serverFor(sdk, j, seen, errors), authFor(sdk) as never);
    const tc = tetherClient(kit.client);
    const handles: JobHandle[] = [];
    let partial = '';
    const progress: number[] = [];
    const r = await tc.callJob(
      'corpus.reindex',
      { files: 12, delayMs: 30 },
      {
        onStatus: (h) => handles.push(h),
        onPartial: (t) => (partial += t),
        onProgress: (p) => progress.push(p.progress),
      },
    );
    expect(firstText(r)).toBe('indexed 12 files');
    expect(handles[0]).toMatchObject({ status: 'working', pollAfterMs: 1_000 });
    expect(handles[0]!.partialUri).toBe(`job://${handles[0]!.jobId}/partial`);
    expect(handles.at(-1)!.status).toBe('completed');
    expect(partial).toBe(docs(12));
    expect(progress.length).toBeGreaterThan(0); // while the first request was open
    expect(seen.finished).toBe(1);
    await j.engine.close(1_000);
  });

  it.skipIf(sdk.era === 'modern')(
    'partial output by subscription (resources/subscribe, resources/updated), unsubscribed at the end',
    async () => {
      const seen: Seen = { aborted: [], finished: 0 };
      const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50, notifyIntervalMs: 20 });
      kit = await sdk.connect(() => serverFor(sdk, j, seen, []));
      const tc = tetherClient(kit.client);
      const chunks: string[] = [];
      const r = await tc.callJob(
        'corpus.reindex',
        { files: 15, delayMs: 40 },
        { partial: 'subscribe', onPartial: (t) => chunks.push(t) },
      );
      expect(firstText(r)).toBe('indexed 15 files');
      expect(chunks.join('')).toBe(docs(15));
      expect(chunks.length).toBeGreaterThan(2); // read on updates, not only at the one poll
      const methods = kit.wire.fromClient().map((m) => m.message.method);
      expect(methods).toContain('resources/subscribe');
      expect(methods).toContain('resources/unsubscribe');
      expect(kit.wire.notifications('notifications/resources/updated').length).toBeGreaterThan(2);
      await j.engine.close(1_000);
    },
  );

  it('waitMs long-polls jobs.status: one status call returns as soon as the job is done', async () => {
    const seen: Seen = { aborted: [], finished: 0 };
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    kit = await sdk.connect(() => serverFor(sdk, j, seen, []), authFor(sdk) as never);
    const tc = tetherClient(kit.client);
    const r = await tc.callJob('corpus.reindex', { files: 40, delayMs: 40 }, { waitMs: 10_000 });
    expect(firstText(r)).toBe('indexed 40 files');
    const statusCalls = kit.wire
      .fromClient()
      .filter((m) => m.message.method === 'tools/call' && m.message.params.name === 'jobs.status');
    expect(statusCalls).toHaveLength(1);
    expect(statusCalls[0]!.message.params.arguments).toEqual({ jobId: expect.any(String), waitMs: 10_000 });
    await j.engine.close(1_000);
  });

  it('a job that asks a question: onInputRequest answers it through jobs.status { inputResponses }', async () => {
    const seen: Seen = { aborted: [], finished: 0 };
    const j = jobs({ tools: ['corpus.rebuild'], inlineMs: 50 });
    kit = await sdk.connect(() => serverFor(sdk, j, seen, []), authFor(sdk) as never);
    const tc = tetherClient(kit.client);
    const asked: string[] = [];
    const statuses: string[] = [];
    const r = await tc.callJob(
      'corpus.rebuild',
      { delayMs: 150 },
      {
        minPollMs: 50,
        onStatus: (h) => statuses.push(h.status),
        onInputRequest: async (requests) => {
          for (const [key, req] of Object.entries(requests))
            asked.push(`${key}: ${String((req.params as { message?: string }).message)}`);
          return Object.fromEntries(
            Object.keys(requests).map((k) => [k, { action: 'accept', content: { confirm: true } }]),
          );
        },
      },
    );
    expect(firstText(r)).toBe('rebuilt from scratch');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/: Drop the old index first\?$/);
    expect(statuses).toContain('input_required');
    expect(statuses.at(-1)).toBe('completed');
    await j.engine.close(1_000);
  });

  it('aborting while following sends jobs.cancel and the job stops (its signal aborts)', async () => {
    const seen: Seen = { aborted: [], finished: 0 };
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    kit = await sdk.connect(() => serverFor(sdk, j, seen, []), authFor(sdk) as never);
    const tc = tetherClient(kit.client);
    const ac = new AbortController();
    let jobId: string | undefined;
    const pending = tc.callJob(
      'corpus.reindex',
      { files: 1_000, delayMs: 20 },
      { signal: ac.signal, onStatus: (h) => (jobId ??= h.jobId) },
    );
    await until(() => jobId !== undefined, 5_000, 'the handle');
    ac.abort('user pressed stop');
    const err = await pending.catch((e) => e);
    expect(isCallAborted(err)).toBe(true);
    expect(err.message).toBe(`job ${jobId}: cancelled (user pressed stop); jobs.cancel sent`);
    await until(() => seen.aborted.length === 1, 5_000, 'the job to abort');
    expect(seen.finished).toBe(0);
    await j.engine.close(1_000);
  });
});

describeEachSdk('with @mcp-tether/jobs: MCP tasks', (sdk) => {
  it(`callTask follows corpus.reindex as a ${sdk.era === 'modern' ? '2026 tasks-extension' : '2025-11-25'} task to its result`, async () => {
    const seen: Seen = { aborted: [], finished: 0 };
    const engine = new JobEngine({ store: new MemoryJobStore({ sweepIntervalMs: 50 }) });
    const j = jobs({
      engine,
      fronts: [taskFront({ engine, taskSupport: { 'corpus.reindex': 'optional' }, pollIntervalMs: 250 })],
    });
    kit = await sdk.connect(() => serverFor(sdk, j, seen, []), {
      ...authFor(sdk),
      capabilities: sdk.era === 'modern' ? { extensions: { [TASKS_EXTENSION]: {} } } : { tasks: {} },
    } as never);
    const tc = tetherClient(kit.client);
    const statuses: TaskInfo[] = [];
    const r = await tc.callTask(
      'corpus.reindex',
      { files: 10, delayMs: 30 },
      { onStatus: (t) => statuses.push(t), minPollMs: 100 },
    );
    expect(firstText(r)).toBe('indexed 10 files');
    expect(statuses[0]).toMatchObject({
      status: 'working',
      pollIntervalMs: 250,
      era: sdk.era === 'modern' ? '2026' : '2025-11-25',
    });
    const gets = kit.wire.fromClient().filter((m) => m.message.method === 'tasks/get');
    expect(gets.length).toBeGreaterThan(0);
    await engine.close(1_000);
  });

  it(`a task that asks a question mid-way: ${sdk.era === 'modern' ? 'input_required → onInputRequest → tasks/update' : 'tasks/result delivers elicitation/create to the client handler'}`, async () => {
    const seen: Seen = { aborted: [], finished: 0 };
    const engine = new JobEngine({ store: new MemoryJobStore({ sweepIntervalMs: 50 }) });
    const j = jobs({
      engine,
      fronts: [taskFront({ engine, taskSupport: { 'corpus.rebuild': 'optional' }, pollIntervalMs: 100 })],
    });
    const answer = { action: 'accept' as const, content: { confirm: true } };
    kit = await sdk.connect(() => serverFor(sdk, j, seen, []), {
      ...authFor(sdk),
      capabilities:
        sdk.era === 'modern'
          ? { extensions: { [TASKS_EXTENSION]: {} }, elicitation: { form: {} } }
          : { tasks: {}, elicitation: { form: {} } },
      elicit: [answer],
    } as never);
    const tc = tetherClient(kit.client);
    const asked: string[] = [];
    const r = await tc.callTask(
      'corpus.rebuild',
      { delayMs: 100 },
      {
        minPollMs: 50,
        onInputRequest: async (requests) => {
          asked.push(...Object.keys(requests));
          return Object.fromEntries(Object.keys(requests).map((k) => [k, answer]));
        },
      },
    );
    expect(firstText(r)).toBe('rebuilt from scratch');
    if (sdk.era === 'modern') {
      expect(asked).toHaveLength(1);
      expect(kit.wire.fromClient().some((m) => m.message.method === 'tasks/update')).toBe(true);
    } else {
      expect(asked).toHaveLength(0);
      expect(kit.elicitations).toHaveLength(1);
    }
    await engine.close(1_000);
  });

  it('aborting a task sends tasks/cancel and the job stops', async () => {
    const seen: Seen = { aborted: [], finished: 0 };
    const engine = new JobEngine({ store: new MemoryJobStore({ sweepIntervalMs: 50 }) });
    const j = jobs({
      engine,
      fronts: [taskFront({ engine, taskSupport: { 'corpus.reindex': 'optional' }, pollIntervalMs: 100 })],
    });
    kit = await sdk.connect(() => serverFor(sdk, j, seen, []), {
      ...authFor(sdk),
      capabilities: sdk.era === 'modern' ? { extensions: { [TASKS_EXTENSION]: {} } } : { tasks: {} },
    } as never);
    const tc = tetherClient(kit.client);
    const ac = new AbortController();
    let taskId: string | undefined;
    const pending = tc.callTask(
      'corpus.reindex',
      { files: 1_000, delayMs: 20 },
      { signal: ac.signal, onStatus: (t) => (taskId ??= t.taskId), minPollMs: 100 },
    );
    await until(() => taskId !== undefined, 5_000, 'the task');
    ac.abort('enough');
    const err = await pending.catch((e) => e);
    expect(isCallAborted(err)).toBe(true);
    await until(() => seen.aborted.length === 1, 5_000, 'the job to abort');
    expect(
      kit.wire.fromClient().some((m) => m.message.method === 'tasks/cancel' && m.message.params.taskId === taskId),
    ).toBe(true);
    await engine.close(1_000);
  });
});
