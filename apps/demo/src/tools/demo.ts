/**
 * The demo's tools. Names, arguments and behaviour are a contract other tests rely on (issue 7).
 * Every argument is validated by zod through the SDK (bad arguments get the SDK's invalid-params
 * result); every tool has an `inputSchema` so handlers get `(args, ctx)`.
 */
import { sleep } from '@mcp-tether/cancel';
import { LOG_LEVELS } from '@mcp-tether/core';
import '@mcp-tether/log-channel'; // declares ctx.log
import { progress } from '@mcp-tether/progress';
import { z } from 'zod';
import type { Records } from '../state.js';
import { text, tool, type DemoServer } from './register.js';

/** Register the demo tools on `server`. */
export function registerDemoTools(server: DemoServer, deps: { records: Records }): void {
  tool(
    server,
    'report.generate',
    {
      title: 'Generate a report',
      description: 'Loads rows, renders charts and summarizes them; reports progress at each stage.',
      inputSchema: z.object({
        rows: z.number().int().min(1).max(1_000).default(5).describe('Rows to load'),
        delayMs: z.number().int().min(0).max(10_000).default(100).describe('Simulated I/O time per row, in ms'),
      }),
      annotations: { readOnlyHint: true },
    },
    async function* ({ rows, delayMs }, ctx) {
      const values: number[] = [];
      for (let i = 1; i <= rows; i++) {
        await sleep(delayMs, ctx.signal);
        values.push(((i * 7919) % 100) + 1);
        yield progress((i / rows) * 60, `loaded row ${i}/${rows}`);
      }
      await sleep(delayMs, ctx.signal);
      yield progress(90, 'charts rendered');
      const sum = values.reduce((a, b) => a + b, 0);
      yield progress(100, 'summary written');
      return text(`Report: ${rows} rows, total ${sum}, mean ${(sum / rows).toFixed(2)}`);
    },
  );

  tool(
    server,
    'progress.flood',
    {
      title: 'Flood progress',
      description: 'Reports progress on every iteration of a tight loop (the progress middleware throttles it).',
      inputSchema: z.object({ iterations: z.number().int().min(0).max(1_000_000).describe('Loop iterations') }),
      annotations: { readOnlyHint: true },
    },
    async function* ({ iterations }) {
      for (let i = 1; i <= iterations; i++) yield progress({ progress: i, total: iterations });
      return text(String(iterations));
    },
  );

  tool(
    server,
    'job.quiet',
    {
      title: 'Quiet job',
      description: 'Waits `ms` milliseconds without reporting anything (cancellable); returns "done".',
      inputSchema: z.object({ ms: z.number().int().min(0).max(600_000).describe('How long to wait, in ms') }),
      annotations: { readOnlyHint: true },
    },
    async ({ ms }, ctx) => {
      await sleep(ms, ctx.signal);
      return text('done');
    },
  );

  tool(
    server,
    'records.increment',
    {
      title: 'Increment a counter',
      description: 'Reads the counter `key`, waits `delayMs`, writes counter + 1; returns the new value.',
      inputSchema: z.object({
        key: z.string().min(1).max(200).describe('Counter name'),
        delayMs: z.number().int().min(0).max(10_000).default(50).describe('Time between read and write, in ms'),
      }),
      annotations: { destructiveHint: true, readOnlyHint: false, idempotentHint: false },
    },
    async ({ key, delayMs }, ctx) => {
      const value = await deps.records.read(key, ctx.fencingToken);
      await sleep(delayMs, ctx.signal);
      await deps.records.write(key, value + 1, ctx.fencingToken);
      return text(String(value + 1));
    },
  );

  tool(
    server,
    'records.get',
    {
      title: 'Read a counter',
      description: 'Returns the value of the counter `key` (0 when never incremented).',
      inputSchema: z.object({ key: z.string().min(1).max(200).describe('Counter name') }),
      annotations: { readOnlyHint: true },
    },
    async ({ key }) => text(String(await deps.records.read(key))),
  );

  tool(
    server,
    'logs.emit',
    {
      title: 'Emit logs',
      description:
        'Logs one message at each of the 8 levels (logger "demo"); the client sees those at or above its level.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true },
    },
    async (_args, ctx) => {
      const log = ctx.log.child('demo');
      for (const [i, level] of LOG_LEVELS.entries())
        log.log(level, `message ${i + 1}/${LOG_LEVELS.length} at level ${level}`);
      return text(String(LOG_LEVELS.length));
    },
  );
}
