/**
 * `connect(url)` + `follow(name, args)` against real servers (`@mcp-tether/jobs` behind
 * `@mcp-tether/http` on 127.0.0.1), on both SDK lines and both eras, for every way a server
 * answers: inline, a job handle, a 2025-11-25 task, a 2026-07-28 task. Runs longer than the
 * client's request timeout (1 s per request, 3 s of work), progress for the whole life of the
 * work, partial output, questions answered by the client's elicitation handler, and a cancel that
 * reaches the work.
 */
import { until } from '@mcp-tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type ConnectOptions, type FollowStatus, isCallAborted, type TetherClient } from '../src/index.js';
import { type FollowServer, followServer } from './fixtures/follow-server.js';

interface Target {
  name: string;
  legacy: 'v1' | 'v2';
  connect: ConnectOptions;
  era: 'legacy' | 'modern';
}

const targets: Target[] = [
  { name: 'SDK 1.x client, 2025 session (SDK 1.x server)', legacy: 'v1', connect: { sdk: 'v1' }, era: 'legacy' },
  {
    name: 'SDK 2.x client, 2025 session (SDK 2.x server)',
    legacy: 'v2',
    connect: { sdk: 'v2', era: 'legacy' },
    era: 'legacy',
  },
  { name: 'SDK 2.x client, 2026-07-28 (SDK 2.x server)', legacy: 'v2', connect: { sdk: 'v2' }, era: 'modern' },
];

let server: FollowServer | undefined;
let client: TetherClient | undefined;
afterEach(async () => {
  await client?.close();
  await server?.close();
  client = server = undefined;
});

/** Every JSON-RPC message the client POSTed, in order. */
function recorder() {
  const sent: Array<{ method?: string; params?: any }> = [];
  const fetchRecorded: typeof fetch = (input, init) => {
    if (typeof init?.body === 'string') {
      const body = JSON.parse(init.body);
      for (const m of Array.isArray(body) ? body : [body]) sent.push(m);
    }
    return fetch(input, init);
  };
  return { sent, fetch: fetchRecorded, methods: () => sent.map((m) => m.method) };
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join('');
const increasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]!);
const text = (r: { content?: Array<{ text?: string }> }) => r.content?.[0]?.text;

for (const t of targets) {
  describe(`follow [${t.name}]`, () => {
    it('an inline answer is the result: progress, no status', async () => {
      // a 30 ms call answered inline: a 10 s window, so that a loaded machine does not make it a job
      server = await followServer({ legacy: t.legacy, tasks: false, inlineMs: 10_000 });
      const rec = recorder();
      client = await connect(server.url, { ...t.connect, fetch: rec.fetch });
      const progress: number[] = [];
      const statuses: FollowStatus[] = [];
      const r = await client.follow(
        'reindex',
        { steps: 3, stepMs: 10 },
        { onProgress: (p) => progress.push(p.progress), onStatus: (s) => statuses.push(s) },
      );
      expect(text(r)).toBe('reindexed 3 steps');
      expect(progress).toEqual([1, 2, 3]);
      expect(statuses).toEqual([]);
      expect(rec.methods().filter((m) => m?.startsWith('tasks/'))).toEqual([]);
    });

    it('a job handle, followed through a 1 s request timeout for 3 s of work: progress all along, partial output', async () => {
      server = await followServer({ legacy: t.legacy, tasks: false });
      const rec = recorder();
      client = await connect(server.url, { ...t.connect, fetch: rec.fetch });
      const progress: number[] = [];
      const statuses: FollowStatus[] = [];
      let partial = '';
      let afterHandle = 0;
      const r = await client.follow(
        'reindex',
        { steps: 10, stepMs: 300 },
        {
          timeout: 1_000,
          onProgress: (p) => {
            progress.push(p.progress);
            if (statuses.length) afterHandle++;
          },
          onStatus: (s) => statuses.push(s),
          onPartial: (chunk) => {
            partial += chunk;
          },
        },
      );
      expect(text(r)).toBe('reindexed 10 steps');
      expect(statuses[0]).toMatchObject({ kind: 'job', status: 'working' });
      expect(statuses.at(-1)).toMatchObject({ kind: 'job', status: 'completed' });
      expect(partial).toBe(lines(10));
      expect(increasing(progress)).toBe(true);
      expect(afterHandle).toBeGreaterThan(0); // progress went on after the call answered with the handle
      expect(progress.at(-1)).toBeGreaterThanOrEqual(9);
      // Long-polls: jobs.status carried waitMs, within the request timeout.
      const polls = rec.sent.filter((m) => m.method === 'tools/call' && m.params?.name === 'jobs.status');
      expect(polls.length).toBeGreaterThan(0);
      expect(polls.every((m) => m.params.arguments.waitMs > 0 && m.params.arguments.waitMs <= 250)).toBe(true);
      expect(server.finished).toBe(1);
    });

    it(`a ${t.era === 'modern' ? '2026-07-28' : '2025-11-25'} task, followed through a 1 s request timeout for 3 s of work`, async () => {
      server = await followServer({ legacy: t.legacy, tasks: true });
      const rec = recorder();
      client = await connect(server.url, { ...t.connect, fetch: rec.fetch });
      const progress: number[] = [];
      const statuses: FollowStatus[] = [];
      let afterTask = 0;
      const r = await client.follow(
        'reindex',
        { steps: 10, stepMs: 300 },
        {
          timeout: 1_000,
          onProgress: (p) => {
            progress.push(p.progress);
            if (statuses.length) afterTask++;
          },
          onStatus: (s) => statuses.push(s),
        },
      );
      expect(text(r)).toBe('reindexed 10 steps');
      const kind = t.era === 'modern' ? 'task-2026' : 'task-2025';
      expect(statuses[0]).toMatchObject({ kind, status: 'working' });
      expect(rec.methods()).toContain('tasks/get');
      if (t.era === 'legacy') {
        const call = rec.sent.find((m) => m.method === 'tools/call' && m.params?.name === 'reindex');
        expect(call?.params.task).toEqual({}); // asked for a task: the tool lists execution.taskSupport
        expect(rec.methods()).toContain('tasks/result');
      }
      // After the task was created: 2025-11-25 keeps the creating call's token; 2026 answers each tasks/get's token.
      expect(afterTask).toBeGreaterThan(0);
      expect(increasing(progress)).toBe(true);
      expect(server.finished).toBe(1);
    });

    for (const tasks of [false, true]) {
      const kind = !tasks ? 'job handle' : t.era === 'modern' ? '2026-07-28 task' : '2025-11-25 task';
      it(`a question during a ${kind} is answered by the client's elicitation handler`, async () => {
        server = await followServer({ legacy: t.legacy, tasks });
        const asked: string[] = [];
        client = await connect(server.url, {
          ...t.connect,
          onElicit: async (request) => {
            asked.push(request.message);
            return { action: 'accept', content: { confirm: true } };
          },
        });
        const statuses: FollowStatus[] = [];
        const r = await client.follow(
          'confirm',
          { delayMs: 500 },
          { timeout: 5_000, onStatus: (s) => statuses.push(s) },
        );
        expect(text(r)).toBe('dropped and rebuilt');
        expect(asked).toEqual(['Drop the old index first?']);
        expect(statuses.length).toBeGreaterThan(0); // it did become a job or task
      });

      it(`aborting the signal cancels the ${kind} on the server`, async () => {
        server = await followServer({ legacy: t.legacy, tasks });
        client = await connect(server.url, t.connect);
        const ac = new AbortController();
        let status: FollowStatus | undefined;
        const pending = client.follow(
          'reindex',
          { steps: 1_000, stepMs: 20 },
          { signal: ac.signal, onStatus: (s) => (status ??= s) },
        );
        await until(() => status !== undefined, 10_000, 'the job or task');
        ac.abort('user pressed stop');
        const err = await pending.catch((e) => e);
        expect(isCallAborted(err)).toBe(true);
        expect(err.kind).toBe('cancelled');
        expect(err.message).toMatch(/user pressed stop.*(jobs\.cancel|tasks\/cancel) sent/);
        await until(() => server!.aborted.length === 1, 10_000, 'the work to stop');
        expect(server.finished).toBe(0);
      });
    }
  });
}

describe('connect', () => {
  it('SDK 2.x, era auto, against an endpoint without 2026-07-28: falls back to a 2025 session and follows', async () => {
    server = await followServer({ legacy: 'v2', tasks: false, modern: false });
    client = await connect(server.url, { sdk: 'v2' });
    expect((client.client as unknown as { getProtocolEra(): string }).getProtocolEra()).toBe('legacy');
    const r = await client.follow('reindex', { steps: 2, stepMs: 200 }, { timeout: 5_000 });
    expect(text(r)).toBe('reindexed 2 steps');
  });

  it('refuses a URL that is not http(s), and era "modern" on SDK 1.x', async () => {
    await expect(connect('file:///tmp/mcp')).rejects.toThrow(/expected an http\(s\) URL/);
    await expect(connect('http://127.0.0.1:9/mcp', { sdk: 'v1', era: 'modern' })).rejects.toThrow(/needs SDK 2\.x/);
  });
});
