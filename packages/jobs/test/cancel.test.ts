/**
 * Every cancel route the jobs middleware owns — jobs.cancel, the TTL, cancel().drain() — on the wire:
 * the handler's finally runs once, nothing is produced or sent after, and the real mutex() lease
 * (held for the whole job, not for the creating request) is released.
 */
import { cancel } from '@mcp-tether/cancel';
import { isCallAbortReason } from '@mcp-tether/core';
import { firstText, pause, until } from '@mcp-tether/testing';
import { describeEachSdk } from '@mcp-tether/testing/matrix';
import { mrtr } from '@mcp-tether/mrtr';
import { mutex } from '@mcp-tether/mutex';
import { progressMiddleware } from '@mcp-tether/progress';
import { expect, it } from 'vitest';
import { JobExpired, jobs } from '../src/index.js';
import { as, build, finish, handleOf, newProbe } from './fixtures.js';

describeEachSdk('jobs: cancel routes', (sdk) => {
  async function setup(jobOptions: Record<string, unknown> = {}) {
    const probe = newProbe();
    const errors: unknown[] = [];
    const c = cancel();
    const m = mutex();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 100, notifyIntervalMs: 20, ...jobOptions });
    const kit = await sdk.connect(
      () => build(sdk, [c, progressMiddleware(), mrtr(), m, j], j, probe, errors),
      as(sdk, 'alice'),
    );
    const first = await kit.callTool('corpus.reindex', { files: 10_000, delayMs: 20 }, { progressToken: 'tok' });
    const h = handleOf(first);
    expect(h.status).toBe('working');
    // The lease outlives the creating request: the job still holds the lock.
    expect(m.stats().running).toBe(1);
    if (sdk.era === 'legacy') await kit.client.subscribeResource({ uri: h.partialUri });
    const answeredSeq = kit.wire.responseTo(
      kit.wire.fromClient().find((x) => x.message.method === 'tools/call')!.message.id,
    )!.seq;
    return { probe, errors, c, m, j, kit, h, answeredSeq };
  }

  /** After the job ended: quiet on the wire, no result, lock free (a new call takes it at once). */
  async function afterEnd(s: Awaited<ReturnType<typeof setup>>) {
    const { probe, m, kit, h, answeredSeq } = s;
    await until(() => probe.finallies.get(h.jobId) === 1, 5_000, 'the handler finally');
    await until(() => m.stats().running === 0, 5_000, 'the lease released');
    await pause(400); // a last (throttled) resources/updated may still be on its way
    const quietFrom = kit.wire.messages.length;
    await pause(300);
    expect(kit.wire.messages.slice(quietFrom).filter((x) => x.direction === 'server->client')).toEqual([]);
    expect(probe.finallies.get(h.jobId)).toBe(1);
    expect(probe.results).not.toContain(h.jobId);
    expect(kit.wire.progress('tok').every((p) => p.seq < answeredSeq)).toBe(true);
  }

  it('jobs.cancel: cancelled at once, finally once, nothing after, lease released', async () => {
    const s = await setup();
    try {
      await until(() => s.probe.started.includes(s.h.jobId), 2_000, 'the job to start');
      const r = await s.kit.callTool('jobs.cancel', { jobId: s.h.jobId });
      expect(handleOf(r).status).toBe('cancelled');
      expect(firstText(r)).toMatch(/was cancelled/);
      await afterEnd(s);
      const again = await s.kit.callTool('jobs.status', { jobId: s.h.jobId });
      expect(handleOf(again)).toMatchObject({ status: 'cancelled' });
      expect(handleOf(again).result).toBeUndefined();
      const reason = s.probe.signals.get(s.h.jobId)!.reason;
      expect(isCallAbortReason(reason) && reason.kind).toBe('cancelled');
      // cancelling again is harmless and says so
      expect(firstText(await s.kit.callTool('jobs.cancel', { jobId: s.h.jobId }))).toMatch(/already cancelled/);
      // the lock is free for the next destructive call, which runs inline
      expect(firstText(await finish(s.kit, await s.kit.callTool('corpus.reindex', { files: 2, delayMs: 0 })))).toBe(
        'indexed 2 files',
      );
      expect(s.errors).toEqual([]);
    } finally {
      await s.kit.close();
    }
  });

  it('TTL: the job aborts when its TTL passes and is then gone (unknown id)', async () => {
    const s = await setup({ ttlMs: 1_500 });
    try {
      await afterEnd(s);
      expect(s.probe.signals.get(s.h.jobId)!.reason).toBeInstanceOf(JobExpired);
      const r = await s.kit.callTool('jobs.status', { jobId: s.h.jobId });
      expect(r.isError).toBe(true);
      expect(r.structuredContent.code).toBe('JOB_NOT_FOUND');
      expect(firstText(await finish(s.kit, await s.kit.callTool('corpus.reindex', { files: 1, delayMs: 0 })))).toBe(
        'indexed 1 files',
      );
      expect(s.errors).toEqual([]);
    } finally {
      await s.kit.close();
    }
  });

  it('cancel().drain(): aborts the detached job and waits for its finally', async () => {
    const s = await setup();
    try {
      await until(() => s.probe.started.includes(s.h.jobId), 2_000, 'the job to start');
      expect(s.c.inFlight).toBeGreaterThanOrEqual(1); // the detached job still counts
      const drained = await s.c.drain(5_000);
      // drain returned only after the job's handler ran its finally
      expect(s.probe.finallies.get(s.h.jobId)).toBe(1);
      expect(drained.pending).toBe(0);
      expect(drained.aborted).toBeGreaterThanOrEqual(1);
      const reason = s.probe.signals.get(s.h.jobId)!.reason;
      expect(isCallAbortReason(reason) && reason.kind).toBe('shutdown');
      await afterEnd(s);
      const job = await s.j.engine.get(s.h.jobId, s.probe.owners.get(s.h.jobId)!);
      expect(job, JSON.stringify(job)).toMatchObject({ status: 'cancelled', statusMessage: 'server shutting down' });
      expect(job!.result).toBeUndefined();
    } finally {
      await s.kit.close();
    }
  });

  it.skipIf(sdk.era === 'modern')(
    'closing the connection that owns a job aborts it (nobody could reach it again)',
    async () => {
      const s = await setup();
      await until(() => s.probe.started.includes(s.h.jobId), 2_000, 'the job to start');
      await s.kit.close();
      await until(() => s.probe.finallies.get(s.h.jobId) === 1, 5_000, 'the handler finally');
      await until(() => s.m.stats().running === 0, 5_000, 'the lease released');
      const reason = s.probe.signals.get(s.h.jobId)!.reason;
      expect(isCallAbortReason(reason) && reason.kind).toBe('disconnect');
      expect(await s.j.engine.get(s.h.jobId, s.probe.owners.get(s.h.jobId)!)).toMatchObject({ status: 'cancelled' });
    },
  );

  it('a client cancel while the call still runs inline cancels the job: no response, finally once, lease released', async () => {
    const probe = newProbe();
    const m = mutex();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 10_000 });
    const kit = await sdk.connect(
      () => build(sdk, [cancel(), progressMiddleware(), mrtr(), m, j], j, probe),
      as(sdk, 'alice'),
    );
    try {
      const call = kit.start('corpus.reindex', { files: 10_000, delayMs: 20 }, { id: 'inline-1' });
      await until(() => probe.started.length === 1, 3_000, 'the job to start');
      const id = probe.started[0]!;
      await kit.cancel('inline-1', 'changed my mind');
      await until(() => probe.finallies.get(id) === 1, 5_000, 'the handler finally');
      await until(() => m.stats().running === 0, 5_000, 'the lease released');
      await pause(200);
      expect(kit.wire.responseTo('inline-1')).toBeUndefined();
      expect(await j.engine.get(id, probe.owners.get(id)!)).toMatchObject({ status: 'cancelled' });
      expect(probe.results).toEqual([]);
      void call;
    } finally {
      await kit.close();
    }
  });
});
