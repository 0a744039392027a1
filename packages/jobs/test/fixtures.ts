/** The servers the wire tests drive: `corpus.reindex` (seed 004's example) and friends, on any SDK line. */
import { handler, progressEvent, type CallContext, type MiddlewareLike } from '@mcp-tether/core';
import { sleep } from '@mcp-tether/testing';
import { tetheredServer, type MatrixServer, type SdkTarget } from '@mcp-tether/testing/matrix';
import { requireInput, readInput } from '@mcp-tether/mrtr';
import { ask } from '@mcp-tether/mrtr';
import { z } from 'zod';
import type { JobsMiddleware } from '../src/index.js';

/** What the handlers saw, per job id (or per call when not a job). */
export interface Probe {
  started: string[];
  finallies: Map<string, number>;
  results: string[];
  signals: Map<string, AbortSignal>;
  owners: Map<string, string>;
}

export function newProbe(): Probe {
  return { started: [], finallies: new Map(), results: [], signals: new Map(), owners: new Map() };
}

const idOf = (ctx: CallContext) => ctx.job?.id ?? `call:${String(ctx.requestId)}`;

/** Register the demo-like tools on a tethered server. */
export function registerTools(server: MatrixServer, j: JobsMiddleware, probe: Probe): MatrixServer {
  j.registerTools(server as never);
  server.registerTool(
    'corpus.reindex',
    {
      description: 'Reindex a corpus',
      inputSchema: { files: z.number().int().min(1).max(100_000), delayMs: z.number().int().min(0).max(10_000) },
      annotations: { destructiveHint: true },
    },
    handler(async function* (args: { files: number; delayMs: number }, ctx) {
      const id = idOf(ctx);
      probe.started.push(id);
      probe.signals.set(id, ctx.signal);
      probe.owners.set(id, j.engine.ownerOf(ctx));
      try {
        for (let done = 1; done <= args.files; done++) {
          await sleep(args.delayMs, ctx.signal);
          const name = `doc-${String(done).padStart(4, '0')}.md`;
          await ctx.job?.append(`${name}\n`);
          yield progressEvent(done, args.files, name);
        }
        probe.results.push(id);
        return { content: [{ type: 'text', text: `indexed ${args.files} files` }] };
      } finally {
        probe.finallies.set(id, (probe.finallies.get(id) ?? 0) + 1);
      }
    }) as never,
  );
  server.registerTool(
    'deploy',
    {
      description: 'Asks before it deploys',
      inputSchema: { target: z.string() },
      annotations: { destructiveHint: true },
    },
    handler(async (args: { target: string }, ctx) => {
      const id = idOf(ctx);
      probe.started.push(id);
      const fields = { confirm: ask.boolean('Really deploy?'), note: ask.string('Why').optional() };
      const answer = readInput(fields, ctx);
      if (answer === undefined) return requireInput.elicit(`Deploy to ${args.target}?`, fields);
      probe.results.push(id);
      return {
        content: [
          {
            type: 'text',
            text: answer.confirm ? `deployed to ${args.target} (${answer.note ?? 'no note'})` : 'not deployed',
          },
        ],
      };
    }) as never,
  );
  server.registerTool(
    'quiet',
    { description: 'Silent for a while', inputSchema: { delayMs: z.number() } },
    handler(async (args: { delayMs: number }, ctx) => {
      await sleep(args.delayMs, ctx.signal);
      return { content: [{ type: 'text', text: 'quiet done' }] };
    }) as never,
  );
  server.registerTool(
    'fail',
    { description: 'Fails after a while', inputSchema: { delayMs: z.number() } },
    handler(async (args: { delayMs: number }, ctx) => {
      await sleep(args.delayMs, ctx.signal);
      throw new Error('disk full');
    }) as never,
  );
  return server;
}

/** A tethered server with `middlewares` and the tools. */
export function build(
  sdk: SdkTarget,
  middlewares: readonly MiddlewareLike[],
  j: JobsMiddleware,
  probe: Probe,
  errors: unknown[] = [],
): MatrixServer {
  const { server } = tetheredServer(sdk, middlewares, errors);
  return registerTools(server, j, probe);
}

/** The handle in a tool result. */
export function handleOf(result: any): {
  jobId: string;
  status: string;
  pollAfterMs: number;
  progress?: number;
  total?: number;
  message?: string;
  result?: any;
  inputRequests?: any;
  partialUri?: string;
  error?: any;
} {
  return result.structuredContent;
}

/** Connect options giving the client a principal (modern: a verified token; legacy in memory: a session id). */
export function as(sdk: SdkTarget, who: string): any {
  return sdk.era === 'modern' ? { authInfo: { token: `token-${who}`, clientId: who, scopes: [] } } : {};
}

/** The outcome of a call: its result, or (when it was answered with a handle) the job's result through jobs.status. */
export async function finish(
  kit: { callTool(name: string, args: Record<string, unknown>): Promise<any> },
  result: any,
): Promise<any> {
  const jobId = result?.structuredContent?.jobId;
  if (typeof jobId !== 'string') return result;
  let r = result;
  for (
    let i = 0;
    i < 30 &&
    handleOf(r).status !== 'completed' &&
    handleOf(r).status !== 'failed' &&
    handleOf(r).status !== 'cancelled';
    i++
  ) {
    r = await kit.callTool('jobs.status', { jobId, waitMs: 2_000 });
  }
  return r;
}
