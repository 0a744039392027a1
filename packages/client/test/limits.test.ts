/**
 * Every limit the client takes holds on every path of following a job, and ends the job it gave
 * up on (issue 26, fault 4), on every SDK line and era, under fake time: a job whose `jobs.status`
 * answers `working` forever is given up at `maxTotalMs` (not polled on), a status poll that times
 * out gives up too, and both send `jobs.cancel`. The same cap holds for `follow` and for tasks.
 */
import { describeEachSdk, type MatrixClient } from '@mcp-tether/testing/matrix';
import { afterEach, expect, it, vi } from 'vitest';
import { isCallAborted, tetherClient } from '../src/index.js';
import { HandleBackend } from './fixtures/handle-server.js';

let kit: MatrixClient | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await kit?.close();
  kit = undefined;
});

/** Advance fake time in steps until `p` settles (bounded); resolves with what it settled with. */
async function drive<T>(p: Promise<T>, stepMs = 250, maxSteps = 1_000): Promise<T | Error> {
  let done = false;
  const settled = p.then(
    (v) => {
      done = true;
      return v;
    },
    (e: Error) => {
      done = true;
      return e;
    },
  );
  for (let i = 0; i < maxSteps && !done; i++) await vi.advanceTimersByTimeAsync(stepMs);
  return settled;
}

const FAKE = { toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] as const };

describeEachSdk('limits while following a job', (sdk) => {
  it('a job working forever: callJob gives up at maxTotalMs (5 s), sends jobs.cancel, and polls no more', async () => {
    vi.useFakeTimers({ toFake: [...FAKE.toFake] });
    const backend = new HandleBackend();
    kit = await sdk.connect(() => backend.server(sdk, [], { runMs: Number.POSITIVE_INFINITY }));
    const tc = tetherClient(kit.client);
    const t0 = Date.now();
    const err = await drive(tc.callJob('reindex', {}, { maxTotalMs: 5_000 }));
    const job = [...backend.jobs.values()][0]!;
    expect(isCallAborted(err)).toBe(true);
    expect(err).toMatchObject({ kind: 'total' });
    expect((err as Error).message).toBe(`job ${job.id}: exceeded the total cap of 5000 ms; jobs.cancel sent`);
    expect(job.cancels).toBe(1);
    expect(job.polls.every((at) => at - t0 <= 5_000)).toBe(true);
    const polls = job.polls.length;
    await vi.advanceTimersByTimeAsync(40_000);
    expect(job.polls.length).toBe(polls); // nothing polls on
  });

  it('a status poll that times out ends the follow and cancels the job', async () => {
    vi.useFakeTimers({ toFake: [...FAKE.toFake] });
    const backend = new HandleBackend();
    kit = await sdk.connect(() => backend.server(sdk, [], { hangStatus: true }));
    const tc = tetherClient(kit.client);
    const err = await drive(tc.callJob('reindex', {}, { timeoutMs: 2_000 }));
    const job = [...backend.jobs.values()][0]!;
    expect(isCallAborted(err)).toBe(true);
    expect(err).toMatchObject({ kind: 'timeout' });
    expect((err as Error).message).toMatch(/^jobs\.status: timed out: .*; cancelled; jobs\.cancel sent$/);
    expect(job.polls).toHaveLength(1);
    expect(job.cancels).toBe(1);
  });

  it('follow: the same cap, on a server that does not long-poll (the client waits the hints itself)', async () => {
    vi.useFakeTimers({ toFake: [...FAKE.toFake] });
    const backend = new HandleBackend();
    kit = await sdk.connect(() => backend.server(sdk, [], { runMs: Number.POSITIVE_INFINITY }));
    const tc = tetherClient(kit.client);
    const t0 = Date.now();
    const err = await drive(tc.follow('reindex', {}, { maxTotalMs: 20_000 }));
    const job = [...backend.jobs.values()][0]!;
    expect(err).toMatchObject({ kind: 'total' });
    expect(job.cancels).toBe(1);
    // The first poll long-polls at once (waitMs 1 000, the hint; this server ignores it and answers
    // at once); from then on the client waits the server's hints itself: 2 s, 4 s, 8 s; 15 s would pass the cap.
    expect(job.polls.map((p) => p - t0)).toEqual([0, 2_000, 6_000, 14_000]);
  });
});
