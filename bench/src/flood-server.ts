/**
 * A stdio MCP server for the progress flood, started as a child process by the flood scenario so
 * that client and server CPU are measured apart: `node --import tsx src/flood-server.ts <kind>`.
 *
 * Tool `flood { n }` reports progress on each of `n` iterations, the idiomatic way for each stack:
 * - `bare`: SDK `McpServer`, `await extra.sendNotification(notifications/progress)` per iteration;
 * - `fastmcp`: FastMCP, `await reportProgress({ progress, total })` per iteration;
 * - `ours`: all six tether middlewares (defaults), a generator handler that `yield progress(...)`s;
 * - `ours-ctx`: the same stack, a plain handler that `await ctx.progress(...)`s;
 * - `ours-delta`: the full stack with `progressMiddleware({ minIntervalMs: 0 })` (delta rule only).
 * Tool `cpu` returns this process's `process.cpuUsage()` (µs), so the client can take deltas.
 */
import { handler, tether } from '@mcp-tether/core';
import { progress, progressMiddleware } from '@mcp-tether/progress';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { FastMCP } from 'fastmcp';
import { z } from 'zod';
import { fullStack, INFO } from './servers.js';

const kind = process.argv[2];
const done = (n: number) => ({ content: [{ type: 'text' as const, text: String(n) }] });
const cpuResult = () => {
  const c = process.cpuUsage();
  return { content: [{ type: 'text' as const, text: JSON.stringify({ user: c.user, system: c.system }) }] };
};

if (kind === 'fastmcp') {
  const server = new FastMCP({ name: INFO.name, version: '1.0.0' });
  server.addTool({
    name: 'flood',
    parameters: z.object({ n: z.number() }),
    execute: async ({ n }, { reportProgress }) => {
      for (let i = 1; i <= n; i++) await reportProgress({ progress: i, total: n });
      return done(n);
    },
  });
  server.addTool({ name: 'cpu', parameters: z.object({}), execute: async () => cpuResult() });
  await server.start({ transportType: 'stdio' });
} else {
  const server = new McpServer(INFO);
  if (kind === 'bare') {
    server.registerTool('flood', { inputSchema: { n: z.number() } }, async ({ n }, extra) => {
      const progressToken = extra._meta?.progressToken;
      for (let i = 1; i <= n; i++) {
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: i, total: n },
          });
        }
      }
      return done(n);
    });
  } else if (kind === 'ours' || kind === 'ours-delta') {
    const stack = fullStack();
    if (kind === 'ours-delta') stack[2] = progressMiddleware({ minIntervalMs: 0 });
    tether(server, stack);
    server.registerTool(
      'flood',
      { inputSchema: { n: z.number() } },
      handler(async function* ({ n }) {
        for (let i = 1; i <= n; i++) yield progress({ progress: i, total: n });
        return done(n);
      }),
    );
  } else if (kind === 'ours-ctx') {
    tether(server, fullStack());
    server.registerTool(
      'flood',
      { inputSchema: { n: z.number() } },
      handler(async ({ n }, ctx) => {
        for (let i = 1; i <= n; i++) await ctx.progress({ progress: i, total: n });
        return done(n);
      }),
    );
  } else {
    console.error(`unknown kind ${kind}`);
    process.exit(2);
  }
  server.registerTool('cpu', { inputSchema: {} }, async () => cpuResult());
  await server.connect(new StdioServerTransport());
}
