/**
 * The demo's tools. Names, arguments and behaviour are a contract other tests rely on (issue 7).
 * Every argument is validated by zod through the SDK (bad arguments get the SDK's invalid-params
 * result); every tool has an `inputSchema` so handlers get `(args, ctx)`.
 */
import { sleep } from '@mcp-tether/cancel';
import { LOG_LEVELS, handler } from '@mcp-tether/core';
import '@mcp-tether/log-channel'; // declares ctx.log
import { progress } from '@mcp-tether/progress';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { RecordStore } from '../state.js';

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

/** Register the demo tools on `server`. */
export function registerDemoTools(server: McpServer, deps: { records: RecordStore }): void {
  server.registerTool(
    'report.generate',
    {
      title: 'Generate a report',
      description: 'Loads rows, renders charts and summarizes them; reports progress at each stage.',
      inputSchema: {
        rows: z.number().int().min(1).max(1_000).default(5).describe('Rows to load'),
        delayMs: z.number().int().min(0).max(10_000).default(100).describe('Simulated I/O time per row, in ms'),
      },
      annotations: { readOnlyHint: true },
    },
    handler(async function* ({ rows, delayMs }, ctx) {
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
    }),
  );

  server.registerTool(
    'progress.flood',
    {
      title: 'Flood progress',
      description: 'Reports progress on every iteration of a tight loop (the progress middleware throttles it).',
      inputSchema: { iterations: z.number().int().min(0).max(1_000_000).describe('Loop iterations') },
      annotations: { readOnlyHint: true },
    },
    handler(async function* ({ iterations }) {
      for (let i = 1; i <= iterations; i++) yield progress({ progress: i, total: iterations });
      return text(String(iterations));
    }),
  );

  server.registerTool(
    'job.quiet',
    {
      title: 'Quiet job',
      description: 'Waits `ms` milliseconds without reporting anything (cancellable); returns "done".',
      inputSchema: { ms: z.number().int().min(0).max(600_000).describe('How long to wait, in ms') },
      annotations: { readOnlyHint: true },
    },
    handler(async ({ ms }, ctx) => {
      await sleep(ms, ctx.signal);
      return text('done');
    }),
  );

  server.registerTool(
    'records.increment',
    {
      title: 'Increment a counter',
      description: 'Reads the counter `key`, waits `delayMs`, writes counter + 1; returns the new value.',
      inputSchema: {
        key: z.string().min(1).max(200).describe('Counter name'),
        delayMs: z.number().int().min(0).max(10_000).default(50).describe('Time between read and write, in ms'),
      },
      annotations: { destructiveHint: true, readOnlyHint: false, idempotentHint: false },
    },
    handler(async ({ key, delayMs }, ctx) => {
      const value = await deps.records.read(key);
      await sleep(delayMs, ctx.signal);
      await deps.records.write(key, value + 1);
      return text(String(value + 1));
    }),
  );

  server.registerTool(
    'records.get',
    {
      title: 'Read a counter',
      description: 'Returns the value of the counter `key` (0 when never incremented).',
      inputSchema: { key: z.string().min(1).max(200).describe('Counter name') },
      annotations: { readOnlyHint: true },
    },
    handler(async ({ key }) => text(String(await deps.records.read(key)))),
  );

  server.registerTool(
    'logs.emit',
    {
      title: 'Emit logs',
      description: 'Logs one message at each of the 8 levels (logger "demo"); the client sees those at or above its level.',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    handler(async (_args, ctx) => {
      const log = ctx.log.child('demo');
      LOG_LEVELS.forEach((level, i) => log.log(level, `message ${i + 1}/${LOG_LEVELS.length} at level ${level}`));
      return text(String(LOG_LEVELS.length));
    }),
  );
}
