/**
 * An answer delivered through a job is checked exactly as inline (`@mcp-tether/mrtr` owns the
 * check): JSON-schema `format` included. `email: "not-an-email"` never reaches the handler, whichever
 * way it comes: 2025-11-25 `tasks/result` elicitation, 2026-07-28 `tasks/update`, `jobs.status
 * { inputResponses }`. The handler asks again, as inline; a valid answer then finishes the job.
 */
import { handler } from '@mcp-tether/core';
import { firstText, pause, until } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer, type MatrixClient, type SdkTarget } from '@mcp-tether/testing/matrix';
import { ask, mrtr, readInput, requireInput } from '@mcp-tether/mrtr';
import { expect, it } from 'vitest';
import { JobEngine, MemoryJobStore, jobs, taskFront, TASKS_EXTENSION } from '../src/index.js';
import { as, handleOf } from './fixtures.js';

const form = { email: ask.string('Your email').format('email') };

/** `signup` asks for an email until it gets a valid one; `seen` records every email the handler read, `runs` every entry. */
function serverFor(
  sdk: SdkTarget,
  middlewares: unknown[],
  seen: string[],
  register?: (s: never) => void,
  runs: number[] = [],
) {
  const { server } = tetheredServer(sdk, middlewares as never);
  register?.(server as never);
  server.registerTool(
    'signup',
    {},
    handler(async () => {
      runs.push(1);
      const answer = readInput(form);
      if (answer === undefined) return requireInput.elicit('Where do we write to you?', form);
      seen.push(answer.email);
      return { content: [{ type: 'text' as const, text: `signed up ${answer.email}` }] };
    }),
  );
  return server;
}

let ids = 0;
async function rpc(kit: MatrixClient, method: string, params: Record<string, unknown>): Promise<Record<string, any>> {
  const id = `fmt-${++ids}`;
  const response = kit.wire.waitFor(
    (m) => m.direction === 'server->client' && m.message.id === id && m.message.method === undefined,
    15_000,
  );
  void kit.sendRaw({ jsonrpc: '2.0', id, method, params }).catch(() => {});
  return (await response).message;
}

describeEachSdk('jobs: an answer is checked like inline (format)', (sdk) => {
  it('jobs.status { inputResponses } with a bad email: refused (the job asks again, the model is told why)', async () => {
    const seen: string[] = [];
    const j = jobs({ tools: ['signup'], inlineMs: 5_000 });
    const kit = await sdk.connect(
      () => serverFor(sdk, [mrtr(), j], seen, (s) => j.registerTools(s)) as never,
      as(sdk, 'alice'),
    );
    try {
      const h = handleOf(await kit.callTool('signup', {}));
      expect(h.status).toBe('input_required');
      const [key] = Object.keys(h.inputRequests);
      const bad = await kit.callTool('jobs.status', {
        jobId: h.jobId,
        inputResponses: { [key!]: { action: 'accept', content: { email: 'not-an-email' } } },
        waitMs: 10_000,
      });
      expect(handleOf(bad).status).toBe('input_required');
      expect(firstText(bad)).toMatch(/did not fit the form .*email/);
      expect(seen).toEqual([]);
      const good = await kit.callTool('jobs.status', {
        jobId: h.jobId,
        inputResponses: { [key!]: { action: 'accept', content: { email: 'ada@example.com' } } },
        waitMs: 10_000,
      });
      expect(handleOf(good).status).toBe('completed');
      expect(firstText(good)).toBe('signed up ada@example.com');
      expect(seen).toEqual(['ada@example.com']);
    } finally {
      await kit.close();
    }
  });

  it('a task answered with a bad email (2025: tasks/result elicitation; 2026: tasks/update): refused, asked again', async () => {
    const seen: string[] = [];
    const engine = new JobEngine({ store: new MemoryJobStore(), progressWriteMs: 0 });
    const front = taskFront({ engine, taskSupport: { signup: 'optional' } });
    const answers = [
      { action: 'accept', content: { email: 'not-an-email' } },
      { action: 'accept', content: { email: 'grace@example.com' } },
    ];
    const runs: number[] = [];
    const kit = await sdk.connect(() => serverFor(sdk, [mrtr(), front], seen, undefined, runs) as never, {
      capabilities:
        sdk.era === 'modern'
          ? { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } }
          : { elicitation: { form: {} } },
      elicit: answers,
    } as never);
    try {
      const created = await rpc(
        kit,
        'tools/call',
        sdk.era === 'legacy'
          ? { name: 'signup', arguments: {}, task: { ttl: 60_000 } }
          : { name: 'signup', arguments: {} },
      );
      expect(created.error).toBeUndefined();
      const id: string = sdk.era === 'legacy' ? created.result.task.taskId : created.result.taskId;
      if (sdk.era === 'legacy') {
        // tasks/result puts the question to the client; the first (bad) answer is refused and the
        // question comes again; the second answer finishes the task.
        const result = await rpc(kit, 'tasks/result', { taskId: id });
        expect(result.error).toBeUndefined();
        expect(result.result.content).toEqual([{ type: 'text', text: 'signed up grace@example.com' }]);
        expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(2);
        expect(seen).toEqual(['grace@example.com']);
        return;
      }
      // 2026: the client polls tasks/get and answers with tasks/update.
      const poll = async (want: string): Promise<Record<string, any>> => {
        for (;;) {
          const got = (await rpc(kit, 'tasks/get', { taskId: id })).result;
          if (got.status === want) return got;
          expect(['working', 'input_required']).toContain(got.status);
          await pause(5);
        }
      };
      const first = await poll('input_required');
      const [key] = Object.keys(first.inputRequests);
      expect(runs.length).toBe(1);
      const ack = await rpc(kit, 'tasks/update', { taskId: id, inputResponses: { [key!]: answers[0] } });
      expect(ack.error).toBeUndefined();
      // the answer was taken (a new round ran) but refused: the handler never saw it and asks again
      await until(() => runs.length === 2, 15_000, 'the second round');
      const again = await poll('input_required');
      expect(again.inputRequests[key!].params.message).toBe('Where do we write to you?');
      expect(seen).toEqual([]);
      await rpc(kit, 'tasks/update', { taskId: id, inputResponses: { [key!]: answers[1] } });
      const done = await poll('completed');
      expect(done.result.content).toEqual([{ type: 'text', text: 'signed up grace@example.com' }]);
      expect(seen).toEqual(['grace@example.com']);
    } finally {
      await kit.close();
    }
  });
});
