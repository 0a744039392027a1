/**
 * Following job handles on the wire (every SDK line and era): the poll schedule under fake time
 * (the server's pollAfterMs hints, and the client's own 1 s → 2 s → 4 s … 15 s when a handle has
 * none), status and partial output surfaced, questions answered, a cancel that reaches the job.
 */
import { firstText, until } from '@mcp-tether/testing';
import { describeEachSdk, type MatrixClient } from '@mcp-tether/testing/matrix';
import { afterEach, expect, it, vi } from 'vitest';
import { backoffMs, isCallAborted, JobError, tetherClient, type JobHandle } from '../src/index.js';
import { HandleBackend, serverHint } from './fixtures/handle-server.js';

let kit: MatrixClient | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await kit?.close();
  kit = undefined;
});

const gaps = (times: number[], from: number) => times.map((t, i) => t - (i === 0 ? from : times[i - 1]!));

/** Advance fake time in small steps until `p` settles (bounded). */
async function drive<T>(p: Promise<T>, stepMs = 250, maxSteps = 1_000): Promise<T> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < maxSteps && !done; i++) await vi.advanceTimersByTimeAsync(stepMs);
  return p;
}

it('backoffMs: 1 s, 2 s, 4 s, 8 s, then 15 s', () => {
  expect([0, 1, 2, 3, 4, 5, 50].map((n) => backoffMs(n))).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]);
  expect(backoffMs(3, 5_000)).toBe(5_000);
});

describeEachSdk('job handles', (sdk) => {
  it('follows the server pollAfterMs hints (fake time), surfaces status and partial output, returns the result', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const backend = new HandleBackend();
    const errors: unknown[] = [];
    kit = await sdk.connect(() => backend.server(sdk, errors));
    const tc = tetherClient(kit.client);
    const statuses: string[] = [];
    let partial = '';
    const t0 = Date.now();
    const result = await drive(
      tc.callJob('reindex', {}, { onStatus: (h) => statuses.push(h.status), onPartial: (t) => (partial += t) }),
    );
    const job = [...backend.jobs.values()][0]!;
    expect(firstText(result)).toBe('reindexed (answer null)');
    // Hints 1 000, 2 000, 4 000, 8 000, 15 000: polls at 1, 3, 7, 15, 30 s; the job ends at 30 s.
    expect(gaps(job.polls, t0)).toEqual([serverHint(0), serverHint(1), serverHint(2), serverHint(3), serverHint(4)]);
    expect(statuses).toEqual(['working', 'working', 'working', 'working', 'working', 'completed']);
    expect(partial).toBe(Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`).join(''));
    expect(errors).toEqual([]);
  });

  it('without a pollAfterMs hint, polls on its own schedule: 1 s, 2 s, 4 s, 8 s, 15 s, 15 s (fake time)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const backend = new HandleBackend();
    kit = await sdk.connect(() => backend.server(sdk, [], { noHint: true, runMs: 45_000 }));
    const tc = tetherClient(kit.client);
    const t0 = Date.now();
    await drive(tc.callJob('reindex', {}));
    const job = [...backend.jobs.values()][0]!;
    expect(gaps(job.polls, t0)).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000]);
  });

  it('a tool that finished inline is returned as is', async () => {
    kit = await sdk.connect(() => new HandleBackend().server(sdk, []));
    const tc = tetherClient(kit.client);
    expect(firstText(await tc.callJob('inline', {}))).toBe('finished inline');
  });

  it('answers a question through onInputRequest (jobs.status with inputResponses), then completes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const backend = new HandleBackend();
    kit = await sdk.connect(() => backend.server(sdk, [], { askAtMs: 500, runMs: 5_000 }));
    const tc = tetherClient(kit.client);
    const asked: string[] = [];
    const result = await drive(
      tc.callJob(
        'reindex',
        {},
        {
          onInputRequest: async (requests) => {
            asked.push(String((requests.confirm!.params as { message: string }).message));
            return { confirm: { action: 'accept', content: { ok: true } } };
          },
        },
      ),
    );
    expect(asked).toEqual(['Drop the old index?']);
    expect(firstText(result)).toBe('reindexed (answer {"action":"accept","content":{"ok":true}})');
  });

  it('a question without onInputRequest, and a failed job, reject with a JobError', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const backend = new HandleBackend();
    kit = await sdk.connect(() => backend.server(sdk, [], { askAtMs: 500 }));
    const tc = tetherClient(kit.client);
    const e1 = (await drive(tc.callJob('reindex', {})).catch((e) => e)) as JobError;
    expect(e1).toBeInstanceOf(JobError);
    expect(e1.status).toBe('input_required');
    expect(e1.message).toMatch(/needs input \(confirm\) and no onInputRequest was given/);

    const failing = new HandleBackend();
    await kit.close();
    kit = await sdk.connect(() => failing.server(sdk, [], { failAtMs: 2_500 }));
    const tc2 = tetherClient(kit.client);
    const e2 = (await drive(tc2.callJob('reindex', {})).catch((e) => e)) as JobError;
    expect(e2.status).toBe('failed');
    expect(e2.error).toEqual({ code: -32603, message: 'disk full' });
    expect(e2.message).toMatch(/^job job-\S+ failed: disk full$/);
  });

  it('aborting the signal while waiting sends jobs.cancel for the job and rejects with CallAbortedError', async () => {
    const backend = new HandleBackend();
    kit = await sdk.connect(() => backend.server(sdk, []));
    const tc = tetherClient(kit.client);
    const ac = new AbortController();
    let first: JobHandle | undefined;
    const pending = tc.callJob('reindex', {}, { signal: ac.signal, onStatus: (h) => (first ??= h) });
    await until(() => first !== undefined, 5_000, 'the first handle');
    ac.abort('user pressed stop');
    const err = await pending.catch((e) => e);
    expect(isCallAborted(err)).toBe(true);
    expect(err.kind).toBe('cancelled');
    expect(err.message).toBe(`job ${first!.jobId}: cancelled (user pressed stop); jobs.cancel sent`);
    const job = backend.jobs.get(first!.jobId)!;
    expect(job.cancels).toBe(1);
    expect(
      kit.wire
        .fromClient()
        .filter((m) => m.message.method === 'tools/call')
        .map((m) => m.message.params.name),
    ).toEqual(['reindex', 'jobs.cancel']);
  });

  it.skipIf(sdk.era === 'modern')(
    'partial output by subscription: resources/subscribe, reads on updates, unsubscribe at the end',
    async () => {
      const backend = new HandleBackend();
      const servers: any[] = [];
      kit = await sdk.connect(() => {
        const s = backend.server(sdk, [], { runMs: 1_000 });
        servers.push(s);
        s.server.registerCapabilities({ resources: { subscribe: true } });
        const on = (method: string, fn: (req: any) => object) =>
          sdk.sdk === 'v1'
            ? s.server.setRequestHandler(
                {
                  shape: { method: { value: method } },
                  safeParse: (v: unknown) => ({ success: true, data: v }),
                } as never,
                fn,
              )
            : s.server.setRequestHandler(method, fn);
        on('resources/subscribe', (req) => (backend.subscribed.add(req.params.uri), {}));
        on('resources/unsubscribe', (req) => (backend.subscribed.delete(req.params.uri), {}));
        return s;
      });
      const tc = tetherClient(kit.client);
      // The server pushes an update every 100 ms to subscribed URIs (a bounded loop).
      let pushes = 0;
      const pusher = setInterval(() => {
        for (const uri of backend.subscribed) void servers[0].server.sendResourceUpdated({ uri }).then(() => pushes++);
      }, 100);
      try {
        let partial = '';
        const reads = () => kit!.wire.fromClient().filter((m) => m.message.method === 'resources/read').length;
        const result = await tc.callJob(
          'reindex',
          {},
          { partial: 'subscribe', onPartial: (t) => (partial += t), minPollMs: 1_000 },
        );
        expect(firstText(result)).toBe('reindexed (answer null)');
        expect(partial).toBe('line 1\n');
        expect(pushes).toBeGreaterThan(3);
        expect(reads()).toBeGreaterThan(3); // read on updates, not only at the polls
        const methods = kit.wire.fromClient().map((m) => m.message.method);
        expect(methods).toContain('resources/subscribe');
        expect(methods).toContain('resources/unsubscribe');
        expect(backend.subscribed.size).toBe(0);
      } finally {
        clearInterval(pusher);
      }
    },
  );
});
