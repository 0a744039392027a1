/**
 * The live-job cap per principal (a clean BUSY refusal past it, other principals unaffected) and the
 * idempotency key (a repeated start returns the existing job and runs nothing), on the wire.
 */
import { cancel } from '@mcp-tether/cancel';
import { anonymousAuthInfo, handler } from '@mcp-tether/core';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer } from '@mcp-tether/testing/matrix';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { jobs } from '../src/index.js';
import { as, build, finish, handleOf, newProbe } from './fixtures.js';

describeEachSdk('jobs: limits', (sdk) => {
  it('past maxLivePerClient: BUSY for that principal only; a finished job frees its place', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50, maxLivePerClient: 2 });
    const factory = () => build(sdk, [cancel(), j], j, probe);
    const alice = await sdk.connect(factory, as(sdk, 'alice'));
    const bob = await sdk.connect(factory, as(sdk, 'bob'));
    try {
      const h1 = handleOf(await alice.callTool('corpus.reindex', { files: 1_000, delayMs: 20 }));
      const h2 = handleOf(await alice.callTool('corpus.reindex', { files: 1_000, delayMs: 20 }));
      expect([h1.status, h2.status]).toEqual(['working', 'working']);
      const busy = await alice.callTool('corpus.reindex', { files: 1, delayMs: 0 });
      expect(busy.isError).toBe(true);
      expect(busy.structuredContent).toMatchObject({ code: 'BUSY', live: 2 });
      expect(firstText(busy)).toMatch(/jobs\.cancel/);
      expect(probe.started).toHaveLength(2); // the refused call never ran
      // another principal is not affected
      expect(firstText(await finish(bob, await bob.callTool('corpus.reindex', { files: 1, delayMs: 0 })))).toBe(
        'indexed 1 files',
      );
      // a cancelled job frees its place
      await alice.callTool('jobs.cancel', { jobId: h1.jobId });
      expect(firstText(await finish(alice, await alice.callTool('corpus.reindex', { files: 1, delayMs: 0 })))).toBe(
        'indexed 1 files',
      );
      await alice.callTool('jobs.cancel', { jobId: h2.jobId });
    } finally {
      await alice.close();
      await bob.close();
    }
  });

  it('a repeated idempotency key returns the existing job and runs nothing', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    const factory = () => build(sdk, [cancel(), j], j, probe);
    const alice = await sdk.connect(factory, as(sdk, 'alice'));
    const bob = await sdk.connect(factory, as(sdk, 'bob'));
    const meta = { 'io.github.mcp-tether/idempotencyKey': 'reindex-2026-12-01' };
    try {
      const first = handleOf(await alice.callTool('corpus.reindex', { files: 20, delayMs: 20 }, { meta }));
      const again = handleOf(await alice.callTool('corpus.reindex', { files: 20, delayMs: 20 }, { meta }));
      expect(again.jobId).toBe(first.jobId);
      expect(probe.started).toEqual([first.jobId]);
      // the same key of another principal is another job
      const other = handleOf(await bob.callTool('corpus.reindex', { files: 20, delayMs: 20 }, { meta }));
      expect(other.jobId).not.toBe(first.jobId);
      // once done, a repeat returns the finished job's result (still nothing runs)
      let done: any;
      for (let i = 0; i < 20; i++) {
        done = await alice.callTool('jobs.status', { jobId: first.jobId, waitMs: 2_000 });
        if (handleOf(done).status !== 'working') break;
      }
      const repeat = await alice.callTool('corpus.reindex', { files: 20, delayMs: 20 }, { meta });
      expect(handleOf(repeat)).toMatchObject({ jobId: first.jobId, status: 'completed' });
      expect(firstText(repeat)).toBe('indexed 20 files');
      expect(probe.started.filter((id) => id === first.jobId)).toHaveLength(1);
      expect(probe.started).toHaveLength(2);
    } finally {
      await alice.close();
      await bob.close();
    }
  });
});

// Issue 26: every client without a principal shared one live-job cap, so one of them could make
// everyone else's job-capable tools answer BUSY. The cap now counts per client key (ctx.clientKey,
// the key a transport front conveys: here `anonymousAuthInfo('ip:…')`), under a global ceiling.
describeEachSdk(
  'jobs: live jobs per client key (issue 26)',
  (sdk) => {
    it('an anonymous client at its cap cannot make another anonymous client BUSY; the global ceiling still holds', async () => {
      const probe = newProbe();
      const j = jobs({ tools: ['corpus.reindex'], inlineMs: 20, maxLivePerClient: 2, maxLive: 3 });
      const factory = () => build(sdk, [cancel(), j], j, probe);
      const attacker = await sdk.connect(factory, { authInfo: anonymousAuthInfo('ip:203.0.113.7') } as never);
      const victim = await sdk.connect(factory, { authInfo: anonymousAuthInfo('ip:198.51.100.2') } as never);
      const third = await sdk.connect(factory, { authInfo: anonymousAuthInfo('ip:192.0.2.9') } as never);
      const handles: Array<[typeof attacker, string]> = [];
      try {
        for (let i = 0; i < 2; i++) {
          const h = handleOf(await attacker.callTool('corpus.reindex', { files: 1_000, delayMs: 20 }));
          expect(h.status).toBe('working');
          handles.push([attacker, h.jobId]);
        }
        const busy = await attacker.callTool('corpus.reindex', { files: 1, delayMs: 0 });
        expect(busy.structuredContent).toMatchObject({ code: 'BUSY', live: 2, scope: 'client' });
        // another client without a principal is served
        const v = handleOf(await victim.callTool('corpus.reindex', { files: 1_000, delayMs: 20 }));
        expect(v.status).toBe('working');
        handles.push([victim, v.jobId]);
        // 3 live jobs in all: the global ceiling refuses a fourth, whoever asks
        const ceiling = await third.callTool('corpus.reindex', { files: 1, delayMs: 0 });
        expect(ceiling.structuredContent).toMatchObject({ code: 'BUSY', scope: 'global' });
        expect(firstText(ceiling)).toMatch(/Try again later/);
        expect(probe.started).toHaveLength(3);
      } finally {
        for (const [kit, id] of handles) await kit.callTool('jobs.cancel', { jobId: id }).catch(() => undefined);
        await attacker.close();
        await victim.close();
        await third.close();
      }
    });
  },
  { only: ['v2-legacy', 'v2-modern'] },
);

describeEachSdk('jobs: partial output is bounded per job (issue 26)', (sdk) => {
  it('an append past maxPartialBytes throws a clear PartialLimitError; what fit is kept; the call result is the error', async () => {
    const j = jobs({ tools: ['dump'], inlineMs: 20, maxPartialBytes: 1_000_000 });
    const factory = () => {
      const { server } = tetheredServer(sdk, [cancel(), j]);
      j.registerTools(server as never);
      server.registerTool(
        'dump',
        { inputSchema: { chunks: z.number().int() } },
        handler(async (args: { chunks: number }, ctx) => {
          const job = ctx.job!;
          await new Promise((r) => setTimeout(r, 50)); // past inlineMs: a handle first
          for (let i = 0; i < args.chunks; i++) await job.append('x'.repeat(400_000));
          return { content: [{ type: 'text' as const, text: 'dumped' }] };
        }),
      );
      return server;
    };
    const kit = await sdk.connect(factory, as(sdk, 'alice'));
    try {
      const h = handleOf(await kit.callTool('dump', { chunks: 5 }));
      const done = await finish(kit, await kit.callTool('jobs.status', { jobId: h.jobId, waitMs: 2_000 }));
      // a handler's throw is the tool's isError result (as a plain call's would be)
      expect(done.isError).toBe(true);
      expect(JSON.stringify(done)).toMatch(/partial output of job .* would exceed its bound \(1000000 bytes/);
      const read = await (kit.client as any).readResource({ uri: h.partialUri });
      expect(read.contents[0].text.length).toBe(800_000); // two chunks fit, the third was refused whole
    } finally {
      await kit.close();
    }
  });
});
