/**
 * Handle mode on the wire (every SDK line and era): a call not done within inlineMs is answered with a
 * job handle; progress, partial output (reads with an offset; resources/updated only to the subscriber)
 * and the result through jobs.status.
 */
import { cancel } from '@mcp-tether/cancel';
import { heartbeat } from '@mcp-tether/heartbeat';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk } from '@mcp-tether/testing/matrix';
import { mrtr } from '@mcp-tether/mrtr';
import { progressMiddleware } from '@mcp-tether/progress';
import { describe, expect, it } from 'vitest';
import { jobs } from '../src/index.js';
import { as, build, handleOf, newProbe } from './fixtures.js';

async function pollUntilDone(kit: any, jobId: string, limit = 40): Promise<any> {
  for (let i = 0; i < limit; i++) {
    const r = await kit.callTool('jobs.status', { jobId, waitMs: 3000 });
    if (handleOf(r).status !== 'working') return r;
  }
  throw new Error(`job ${jobId} still working after ${limit} polls`);
}

describeEachSdk('jobs: handle mode end to end', (sdk) => {
  it('start → handle, progress, partial reads, resources/updated only to the subscriber, result', async () => {
    const probe = newProbe();
    const errors: unknown[] = [];
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 400, notifyIntervalMs: 50 });
    const factory = () => build(sdk, [cancel(), progressMiddleware(), mrtr(), j], j, probe, errors);
    const a = await sdk.connect(factory, as(sdk, 'alice'));
    const b = await sdk.connect(factory, as(sdk, 'bob'));
    try {
      const first = await a.callTool('corpus.reindex', { files: 25, delayMs: 25 }, { progressToken: 'p1' });
      const h = handleOf(first);
      expect(h.status).toBe('working');
      expect(h.jobId).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(h.pollAfterMs).toBe(1000);
      expect(h.partialUri).toBe(`job://${h.jobId}/partial`);
      expect(firstText(first)).toContain(`jobs.status {"jobId":"${h.jobId}"}`);
      const answered = a.wire.responseTo(
        a.wire.fromClient().find((m) => m.message.method === 'tools/call')!.message.id,
      )!;
      // progress rode the request while it was open, and nothing came for it after the handle
      const progress = a.wire.progress('p1');
      expect(progress.length).toBeGreaterThan(0);
      expect(progress.every((p) => p.seq < answered.seq)).toBe(true);

      if (sdk.era === 'legacy') {
        await a.client.subscribeResource({ uri: h.partialUri });
        // another session cannot subscribe (nor learn the job exists)
        await expect(b.client.subscribeResource({ uri: h.partialUri })).rejects.toThrow(/not found/i);
      }
      // read what exists so far, then only what is new
      const r1 = await a.client.readResource({ uri: h.partialUri! });
      const meta1 = r1.contents[0]._meta['io.github.mcp-tether/partial'];
      expect(meta1.offset).toBe(0);
      expect(r1.contents[0].text.split('\n').filter(Boolean).length).toBe(meta1.next);
      await b.client.readResource({ uri: h.partialUri! }).then(
        () => expect.fail('a foreign read must fail'),
        (e: Error) => expect(e.message).toMatch(/not found/i),
      );

      const done = await pollUntilDone(a, h.jobId);
      const dh = handleOf(done);
      expect(dh.status).toBe('completed');
      expect(firstText(done)).toBe('indexed 25 files');
      expect(dh.result).toEqual({ content: [{ type: 'text', text: 'indexed 25 files' }] });
      expect(dh.progress).toBe(25);
      expect(dh.total).toBe(25);
      expect(dh.message).toBe('doc-0025.md');

      const r2 = await a.client.readResource({ uri: `${h.partialUri}?offset=${meta1.next}` });
      const meta2 = r2.contents[0]._meta['io.github.mcp-tether/partial'];
      expect(meta2).toMatchObject({ offset: meta1.next, next: 25, status: 'completed', done: true });
      const all = (r1.contents[0].text + r2.contents[0].text).split('\n').filter(Boolean);
      expect(all).toEqual(Array.from({ length: 25 }, (_, i) => `doc-${String(i + 1).padStart(4, '0')}.md`));

      if (sdk.era === 'legacy') {
        await a.wire.waitFor(
          (m) => m.message.method === 'notifications/resources/updated' && m.message.params?.uri === h.partialUri,
        );
        const updates = a.wire.notifications('notifications/resources/updated');
        expect(updates.length).toBeGreaterThan(0);
        expect(updates.length).toBeLessThan(25); // throttled
        expect(b.wire.notifications('notifications/resources/updated')).toEqual([]);
      }
      // no progress for the creating request after its response
      expect(a.wire.progress('p1').every((p) => p.seq < answered.seq)).toBe(true);
      expect(probe.finallies.get(h.jobId)).toBe(1);
      expect(probe.results).toEqual([h.jobId]);
      expect(errors).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('pollAfterMs backs off 1 s → 2 s → 4 s … 15 s, and after several working answers the text says to do other work', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    const kit = await sdk.connect(() => build(sdk, [cancel(), j], j, probe), as(sdk, 'alice'));
    try {
      const h = handleOf(await kit.callTool('corpus.reindex', { files: 10_000, delayMs: 20 }));
      const seen = [h.pollAfterMs];
      const texts: string[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await kit.callTool('jobs.status', { jobId: h.jobId });
        seen.push(handleOf(r).pollAfterMs);
        texts.push(firstText(r)!);
      }
      expect(seen).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]);
      expect(texts.slice(0, 3).some((t) => /Do other work/.test(t))).toBe(false);
      expect(texts.slice(3).every((t) => /Do other work now and check back later/.test(t))).toBe(true);
      // a job that ends resets the count; cancelling it answers at once
      expect(handleOf(await kit.callTool('jobs.cancel', { jobId: h.jobId })).pollAfterMs).toBe(0);
    } finally {
      await kit.close();
    }
  });

  it('heartbeat keeps a silent call alive while it runs inline, and stops at the handle', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['quiet'], inlineMs: 900 });
    const hb = heartbeat({ silenceMs: 150 });
    const kit = await sdk.connect(
      () => build(sdk, [cancel(), hb, progressMiddleware(), j], j, probe),
      as(sdk, 'alice'),
    );
    try {
      const r = await kit.callTool('quiet', { delayMs: 2_000 }, { progressToken: 'hb' });
      const h = handleOf(r);
      expect(h.status).toBe('working');
      const answered = kit.wire.responseTo(
        kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!.message.id,
      )!;
      const beats = kit.wire.progress('hb');
      expect(beats.length).toBeGreaterThanOrEqual(2);
      expect(beats.every((b) => b.seq < answered.seq)).toBe(true);
      const done = await kit.callTool('jobs.status', { jobId: h.jobId, waitMs: 5_000 });
      expect(firstText(done)).toBe('quiet done');
      expect(kit.wire.progress('hb').length).toBe(beats.length);
    } finally {
      await kit.close();
    }
  });

  it('a jobs.status long-poll with a progress token carries the job progress while it waits', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 100 });
    const kit = await sdk.connect(
      () => build(sdk, [cancel(), progressMiddleware({ minIntervalMs: 0 }), mrtr(), j], j, probe),
      as(sdk, 'alice'),
    );
    try {
      const h = handleOf(await kit.callTool('corpus.reindex', { files: 20, delayMs: 60 }));
      expect(h.status).toBe('working');
      const done = await kit.callTool('jobs.status', { jobId: h.jobId, waitMs: 20_000 }, { progressToken: 'lp' });
      expect(firstText(done)).toBe('indexed 20 files');
      const seen = kit.wire.progress('lp');
      const answered = kit.wire.responseTo(
        kit.wire.fromClient().findLast((m) => m.message.method === 'tools/call')!.message.id,
      )!;
      expect(seen.length).toBeGreaterThanOrEqual(2);
      const values = seen.map((p) => p.progress);
      expect(values.every((v, i) => i === 0 || v > values[i - 1]!)).toBe(true);
      expect(seen.every((p) => p.total === 20 && p.seq < answered.seq)).toBe(true);
    } finally {
      await kit.close();
    }
  });

  it('a call done within inlineMs is answered as a plain call (no handle)', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex', 'fail'], inlineMs: 5_000 });
    const kit = await sdk.connect(() => build(sdk, [cancel(), j], j, probe));
    try {
      const r = await kit.callTool('corpus.reindex', { files: 3, delayMs: 1 });
      expect(r.structuredContent).toBeUndefined();
      expect(firstText(r)).toBe('indexed 3 files');
      const f = await kit.callTool('fail', { delayMs: 1 }).then(
        (x: any) => x,
        (e: Error) => e,
      );
      // a thrown error is what the call would have produced without jobs (an isError result from the SDK, or a JSON-RPC error)
      expect(String(f instanceof Error ? f.message : firstText(f))).toMatch(/disk full/);
    } finally {
      await kit.close();
    }
  });
});

describe('jobs: options', () => {
  it('refuses to guess which tools are jobs', () => {
    expect(() => jobs()).toThrow(TypeError);
  });
});
