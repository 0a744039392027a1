/**
 * Work that outlives the request: `corpus.reindex` (seed 004's example) served by `@mcp-tether/jobs`
 * in every mode — a 2026 task or a 2025-11-25 task when the client asks for one (the task fronts),
 * otherwise inline up to `--inline-ms` and then a job handle polled with `jobs.status`.
 */
import { sleep } from '@mcp-tether/cancel';
import type { JobsMiddleware } from '@mcp-tether/jobs';
import { progress } from '@mcp-tether/progress';
import { z } from 'zod';
import { text, tool, type DemoServer } from './register.js';

/** Register `corpus.reindex`, and `jobs.status` / `jobs.cancel` / `job://{jobId}/partial`, on `server`. */
export function registerJobTools(server: DemoServer, jobs: JobsMiddleware): void {
  jobs.registerTools(server as never);
  tool(
    server,
    'corpus.reindex',
    {
      title: 'Reindex the corpus',
      description:
        'Reindexes `files` documents, `delayMs` each. Long runs are answered with a jobId: follow it with jobs.status (progress, result), read the indexed list so far at job://{jobId}/partial, stop it with jobs.cancel.',
      inputSchema: z.object({
        files: z.number().int().min(1).max(100_000).describe('Documents to index'),
        delayMs: z.number().int().min(0).max(10_000).describe('Simulated indexing time per document, in ms'),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async function* ({ files, delayMs }, ctx) {
      // A run that resumes (its worker died or shut down: --redis runs jobs on BullMQ workers)
      // continues after the last checkpoint: each document is indexed once, the one in flight at
      // the crash at most twice.
      const from = (ctx.job?.resumeFrom as { done?: number } | undefined)?.done ?? 0;
      for (let done = from + 1; done <= files; done++) {
        await sleep(delayMs, ctx.signal);
        const name = `doc-${String(done).padStart(6, '0')}.md`;
        // pattern C: the indexed file list grows as a resource (only when the call runs as a job)
        await ctx.job?.append(`${name}\n`);
        await ctx.job?.checkpoint({ done });
        yield progress({ progress: done, total: files, message: name });
      }
      const resumed = from > 0 ? ` (attempt ${ctx.job?.attempt}, resumed after document ${from})` : '';
      return text(`Reindexed ${files} documents.${resumed}`);
    },
  );
}
