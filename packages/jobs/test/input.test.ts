/**
 * A job asking for input in handle mode: the status answer carries the question, jobs.status takes
 * the answers, the handler runs again with them (mrtr's readInput) and finishes. And bad input:
 * unknown, malformed, foreign and expired job ids get clear errors that leak nothing; the server
 * keeps serving.
 */
import { cancel } from '@mcp-tether/cancel';
import { firstText, pause } from '@mcp-tether/testing';
import { describeEachSdk } from '@mcp-tether/testing/matrix';
import { mrtr } from '@mcp-tether/mrtr';
import { mutex } from '@mcp-tether/mutex';
import { expect, it } from 'vitest';
import { jobs, newJobId } from '../src/index.js';
import { as, build, finish, handleOf, newProbe } from './fixtures.js';

describeEachSdk('jobs: input in handle mode', (sdk) => {
  it('input_required → answered through jobs.status → finished', async () => {
    const probe = newProbe();
    const errors: unknown[] = [];
    const m = mutex();
    const j = jobs({ tools: ['deploy'], inlineMs: 2_000 });
    const kit = await sdk.connect(() => build(sdk, [cancel(), mrtr(), m, j], j, probe, errors), as(sdk, 'alice'));
    try {
      // the handler asks at once: the call is answered with the question, not held for inlineMs
      const t0 = Date.now();
      const first = await kit.callTool('deploy', { target: 'prod' });
      expect(Date.now() - t0).toBeLessThan(1_900);
      const h = handleOf(first);
      expect(h.status).toBe('input_required');
      expect(h.message).toBe('Deploy to prod?');
      expect(Object.keys(h.inputRequests)).toEqual(['confirm+note']);
      expect(h.inputRequests['confirm+note'].params.requestedSchema.properties.confirm.type).toBe('boolean');
      expect(firstText(first)).toContain('"inputResponses"');
      expect(firstText(first)).toContain('confirm (boolean, required)');
      // nothing was asked on the wire: the model answers through jobs.status
      expect(kit.wire.serverRequests('elicitation/create')).toEqual([]);
      // the lock is held while the job waits for its answer
      expect(m.stats().running).toBe(1);

      // malformed answers: a clear refusal, the job still waits
      const bad = await kit.callTool('jobs.status', {
        jobId: h.jobId,
        inputResponses: { 'confirm+note': { action: 'maybe' } },
      });
      expect(bad.isError).toBe(true);
      expect(bad.structuredContent.code).toBe('INVALID_INPUT');
      // content that fails the form is dropped: the handler asks again
      const wrong = await kit.callTool('jobs.status', {
        jobId: h.jobId,
        inputResponses: { 'confirm+note': { action: 'accept', content: { confirm: 'yes' } } },
        waitMs: 3_000,
      });
      expect(handleOf(wrong).status).toBe('input_required');

      const ok = await kit.callTool('jobs.status', {
        jobId: h.jobId,
        inputResponses: { 'confirm+note': { action: 'accept', content: { confirm: true, note: 'friday' } } },
        waitMs: 5_000,
      });
      expect(handleOf(ok).status).toBe('completed');
      expect(firstText(ok)).toBe('deployed to prod (friday)');
      expect(probe.results).toEqual([h.jobId]);
      expect(m.stats().running).toBe(0);
      // answering a finished job: ignored, said plainly
      const late = await kit.callTool('jobs.status', {
        jobId: h.jobId,
        inputResponses: { 'confirm+note': { action: 'accept', content: { confirm: true } } },
      });
      expect(firstText(late)).toMatch(/not waiting for input/);
      expect(errors).toEqual([]);
    } finally {
      await kit.close();
    }
  });

  it('decline reaches the handler', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['deploy'], inlineMs: 500 });
    const kit = await sdk.connect(() => build(sdk, [cancel(), mrtr(), j], j, probe), as(sdk, 'alice'));
    try {
      const h = handleOf(await kit.callTool('deploy', { target: 'dev' }));
      const r = await kit.callTool('jobs.status', {
        jobId: h.jobId,
        inputResponses: { 'confirm+note': { action: 'decline' } },
        waitMs: 5_000,
      });
      // a declined form gives no answer: the handler asks again (its choice); the job waits again
      expect(handleOf(r).status).toBe('input_required');
      await kit.callTool('jobs.cancel', { jobId: h.jobId });
    } finally {
      await kit.close();
    }
  });
});

describeEachSdk('jobs: bad job ids', (sdk) => {
  it('unknown, malformed, foreign and expired ids: clear errors, nothing leaked, server keeps serving', async () => {
    const probe = newProbe();
    const errors: unknown[] = [];
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50, ttlMs: 2_000 });
    const factory = () => build(sdk, [cancel(), mrtr(), j], j, probe, errors);
    const alice = await sdk.connect(factory, as(sdk, 'alice'));
    const bob = await sdk.connect(factory, as(sdk, 'bob'));
    try {
      const t0 = Date.now();
      const h = handleOf(await alice.callTool('corpus.reindex', { files: 1_000, delayMs: 20 }));
      expect(h.status).toBe('working');
      const unknown = newJobId();
      const textOf = (r: any, id: string) => firstText(r)!.replace(id, '<id>');

      const u = await alice.callTool('jobs.status', { jobId: unknown });
      expect(u.isError).toBe(true);
      expect(u.structuredContent.code).toBe('JOB_NOT_FOUND');

      // foreign: exactly the unknown answer, for status and cancel alike
      const f = await bob.callTool('jobs.status', { jobId: h.jobId, waitMs: 100 });
      expect(f.structuredContent.code).toBe('JOB_NOT_FOUND');
      expect(textOf(f, h.jobId)).toBe(textOf(u, unknown));
      const fc = await bob.callTool('jobs.cancel', { jobId: h.jobId });
      expect(fc.structuredContent.code).toBe('JOB_NOT_FOUND');
      expect(textOf(fc, h.jobId)).toBe(textOf(await bob.callTool('jobs.cancel', { jobId: unknown }), unknown));
      const fa = await bob.callTool('jobs.status', { jobId: h.jobId, inputResponses: { x: { action: 'accept' } } });
      expect(fa.structuredContent.code).toBe('JOB_NOT_FOUND');
      // and the job went on untouched
      expect(handleOf(await alice.callTool('jobs.status', { jobId: h.jobId })).status).toBe('working');

      // malformed ids
      for (const bad of ['', 'abc', '../../etc/passwd', 'x'.repeat(500), '"; DROP TABLE jobs']) {
        const r = await alice.callTool('jobs.status', { jobId: bad });
        expect(r.isError).toBe(true);
        expect(r.structuredContent.code).toBe('INVALID_JOB_ID');
        expect(firstText(r)!.length).toBeLessThan(300);
      }
      // wrong types are refused by the tool's schema (a JSON-RPC error or an isError result, per SDK)
      const typed = await alice.callTool('jobs.status', { jobId: 42 } as never).then(
        (r: any) => r,
        (e: Error) => e,
      );
      expect(typed instanceof Error ? typed.message : typed.isError).toBeTruthy();
      // a bogus partial URI
      await expect(alice.client.readResource({ uri: 'job://nope/partial' })).rejects.toThrow();

      // expired: the job outlived its TTL → unknown
      await pause(Math.max(0, t0 + 2_300 - Date.now()));
      const e = await alice.callTool('jobs.status', { jobId: h.jobId });
      expect(e.structuredContent.code).toBe('JOB_NOT_FOUND');
      expect(textOf(e, h.jobId)).toBe(textOf(u, unknown));

      // the server keeps serving
      await alice.ping();
      const fresh = await finish(alice, await alice.callTool('corpus.reindex', { files: 2, delayMs: 0 }));
      expect(firstText(fresh)).toBe('indexed 2 files');
      expect(errors).toEqual([]);
    } finally {
      await alice.close();
      await bob.close();
    }
  });
});
