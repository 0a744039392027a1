/**
 * The one-page server over real HTTP, from one registration per tool: an SDK 1.x client session and
 * an SDK 2.x client pinned to 2026-07-28 (and raw 2026-07-28 requests) on the same URL, with the
 * 2025-era sessions served by SDK 1.x and by SDK 2.x.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import { onePage } from './fixtures/app.js';
import { raw26, textOf, v1Client, v2Client } from './helpers.js';

process.env.SECOND_MS = '300'; // the fixture's "second": 300 ms here (progress is throttled to one per 200 ms)

describe.each(['v1', 'v2'] as const)('one-page server, 2025-era sessions on SDK %s', (legacySdk) => {
  let app: App;
  let url: URL;
  const counter = { value: 0 };

  beforeAll(async () => {
    ({ app } = onePage({ legacySdk, handleSignals: false, log: false, inlineMs: 5_000 }, counter));
    ({ url } = await app.listen(0));
  });
  afterAll(() => app.shutdown(1_000));

  it('lists the three tools (and the job tools) to both eras', async () => {
    const { client } = await v1Client(url);
    const modern = await v2Client(url);
    try {
      for (const list of [await client.listTools(), await modern.listTools()]) {
        const names = list.tools.map((t) => t.name).sort();
        expect(names).toEqual(['counter.increment', 'counter.reset', 'jobs.cancel', 'jobs.status', 'reindex']);
        const reindex = list.tools.find((t) => t.name === 'reindex')!;
        expect(reindex.inputSchema.properties).toHaveProperty('seconds');
      }
      const raw = await raw26(url, 'tools/list', {});
      expect(raw.response?.result.tools.map((t: { name: string }) => t.name)).toContain('counter.reset');
    } finally {
      await client.close();
      await modern.close();
    }
  });

  it('20 concurrent increments return 1..20 (a 2025 session and 2026 requests at once)', async () => {
    counter.value = 0;
    const { client } = await v1Client(url);
    const modern = await v2Client(url);
    try {
      const calls = Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? client : modern).callTool({ name: 'counter.increment', arguments: {} }).then(textOf),
      );
      const values = (await Promise.all(calls)).map(Number).sort((a, b) => a - b);
      expect(values).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(app.stack!.locks.stats().keys.counter?.acquired).toBeGreaterThanOrEqual(20);
    } finally {
      await client.close();
      await modern.close();
    }
  });

  it('reset asks; yes sets 0, no and decline leave the counter (2025 session: elicitation/create)', async () => {
    counter.value = 7;
    const asked: string[] = [];
    let answer: 'yes' | 'no' | 'decline' = 'no';
    const { client } = await v1Client(url, ({ message }) => {
      asked.push(message);
      return answer === 'decline'
        ? { action: 'decline' }
        : { action: 'accept', content: { confirm: answer === 'yes' } };
    });
    try {
      const reset = () => client.callTool({ name: 'counter.reset', arguments: {} }).then(textOf);
      expect(await reset()).toBe('Counter left at 7.');
      answer = 'decline';
      expect(await reset()).toBe('Counter left at 7.');
      answer = 'yes';
      expect(await reset()).toBe('Counter reset to 0.');
      expect(counter.value).toBe(0);
      expect(asked).toEqual(Array(3).fill('Reset the counter (now 7) to 0?'));
    } finally {
      await client.close();
    }
  });

  it('reset over 2026-07-28: input_required, then the retry with the answer', async () => {
    counter.value = 3;
    const modern = await v2Client(url, () => ({ action: 'accept', content: { confirm: true } }));
    try {
      expect(textOf(await modern.callTool({ name: 'counter.reset', arguments: {} }))).toBe('Counter reset to 0.');
    } finally {
      await modern.close();
    }
    // raw: the first answer is input_required with a sealed requestState and a boolean form
    counter.value = 4;
    const first = await raw26(
      url,
      'tools/call',
      { name: 'counter.reset', arguments: {} },
      {
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      },
    );
    const result = first.response?.result;
    expect(result.resultType).toBe('input_required');
    const [key, request] = Object.entries(result.inputRequests as Record<string, any>)[0]!;
    expect(request.params.requestedSchema.properties.confirm.type).toBe('boolean');
    const retry = await raw26(
      url,
      'tools/call',
      {
        name: 'counter.reset',
        arguments: {},
        requestState: result.requestState,
        inputResponses: { [key]: { action: 'accept', content: { confirm: true } } },
      },
      { 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } },
    );
    expect(textOf(retry.response?.result)).toBe('Counter reset to 0.');
    expect(counter.value).toBe(0);
  });

  it('a raw 2026-07-28 request calls counter.increment', async () => {
    counter.value = 41;
    const r = await raw26(url, 'tools/call', { name: 'counter.increment', arguments: {} });
    expect(r.status).toBe(200);
    expect(r.response?.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: '42' }] });
  });

  it('reindex reports one progress step per "second" and its result (2025 session and 2026)', async () => {
    const { client } = await v1Client(url);
    const modern = await v2Client(url);
    try {
      for (const era of ['2025', '2026']) {
        const seen: number[] = [];
        const onprogress = (p: { progress: number }) => void seen.push(p.progress);
        const params = { name: 'reindex', arguments: { seconds: 3 } };
        const result =
          era === '2025'
            ? await client.callTool(params, undefined, { onprogress })
            : await modern.callTool(params, { onprogress }); // SDK 2.x: (params, options)
        expect(textOf(result)).toBe('Reindexed for 3 seconds.');
        // strictly increasing, at most 3 (the SDK clients may drop a final report that arrives with the result)
        expect(seen.length).toBeGreaterThanOrEqual(2);
        expect(seen.every((v, i) => v <= 3 && (i === 0 || v > seen[i - 1]!))).toBe(true);
      }
    } finally {
      await client.close();
      await modern.close();
    }
  });

  it('bad arguments get the SDK invalid-params result; the server goes on', async () => {
    const { client } = await v1Client(url);
    try {
      const bad = await client.callTool({ name: 'reindex', arguments: { seconds: 'ten' } });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/-32602|Input validation/);
      expect(textOf(await client.callTool({ name: 'counter.increment', arguments: {} }))).toMatch(/^\d+$/);
    } finally {
      await client.close();
    }
  });
});

describe('job handles and tasks', () => {
  let app: App;
  let url: URL;
  beforeAll(async () => {
    ({ app } = onePage({ handleSignals: false, log: false, inlineMs: 450 }));
    ({ url } = await app.listen(0));
  });
  afterAll(() => app.shutdown(1_000));

  it('a plain 2025 client gets a job handle past inlineMs, partial output, and the result from jobs.status', async () => {
    const { client } = await v1Client(url);
    try {
      const first = await client.callTool({ name: 'reindex', arguments: { seconds: 5 } });
      const handle = first.structuredContent as { jobId: string; status: string; partialUri: string };
      expect(handle.status).toBe('working');
      let done: any;
      for (let polls = 0; polls < 20; polls++) {
        const s = await client.callTool({ name: 'jobs.status', arguments: { jobId: handle.jobId, waitMs: 5_000 } });
        if ((s.structuredContent as { status: string }).status === 'completed') {
          done = s;
          break;
        }
      }
      expect(textOf(done)).toBe('Reindexed for 5 seconds.');
      const partial = await client.readResource({ uri: handle.partialUri });
      expect((partial.contents[0] as { text: string }).text).toBe(
        Array.from({ length: 5 }, (_, i) => `second ${i + 1} of 5\n`).join(''),
      );
    } finally {
      await client.close();
    }
  });

  it('tools/list marks reindex as an optional task; a 2026 request declaring the tasks extension gets a task', async () => {
    const { client } = await v1Client(url);
    try {
      const reindex = (await client.listTools()).tools.find((t) => t.name === 'reindex') as any;
      expect(reindex.execution?.taskSupport).toBe('optional');
    } finally {
      await client.close();
    }
    const caps = {
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    };
    const created = await raw26(url, 'tools/call', { name: 'reindex', arguments: { seconds: 2 } }, caps);
    const task = created.response?.result;
    expect(task).toMatchObject({ resultType: 'task', status: 'working' });
    let got: any;
    for (let polls = 0; polls < 300; polls++) {
      got = (await raw26(url, 'tasks/get', { taskId: task.taskId }, caps)).response?.result;
      if (got?.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(textOf(got.result)).toBe('Reindexed for 2 seconds.');
  });
});
