/**
 * Fixtures the official conformance suite (`@modelcontextprotocol/conformance`) calls by name, for
 * the 2025-11-25 focus scenarios. See shared/reference/conformance.md §2.1 for each contract.
 */
import { sleep } from '@mcp-tether/cancel';
import '@mcp-tether/log-channel'; // declares ctx.log
import { progress } from '@mcp-tether/progress';
import { z } from 'zod';
import { text, tool, type DemoServer } from './register.js';

/** Register the conformance fixtures on `server`. */
export function registerConformanceFixtures(server: DemoServer): void {
  tool(
    server,
    'test_simple_text',
    { description: 'Conformance: returns one text block', inputSchema: z.object({}) },
    async () => ({ content: [{ type: 'text' as const, text: 'This is a simple text response for testing.' }] }),
  );

  tool(
    server,
    'test_error_handling',
    {
      description: 'Conformance: always fails (the SDK turns the throw into an isError result)',
      inputSchema: z.object({}),
    },
    async (): Promise<never> => {
      throw new Error('This tool intentionally returns an error for testing');
    },
  );

  tool(
    server,
    'test_tool_with_progress',
    {
      description: 'Conformance: reports progress 0, 50, 100 of 100 (through @mcp-tether/progress)',
      inputSchema: z.object({}),
    },
    async function* (_args, ctx) {
      // 250 ms apart: the progress throttle sends at most one notification per 200 ms.
      for (const [i, step] of [0, 50, 100].entries()) {
        if (i > 0) await sleep(250, ctx.signal);
        yield progress({ progress: step, total: 100, message: `Completed step ${step} of 100` });
      }
      return { content: [{ type: 'text' as const, text: 'Tool with progress executed successfully' }] };
    },
  );

  tool(
    server,
    'test_tool_with_logging',
    {
      description: 'Conformance: logs three info messages (through @mcp-tether/log-channel) while it runs',
      inputSchema: z.object({}),
    },
    async (_args, ctx) => {
      ctx.log.info('Tool execution started');
      await sleep(50, ctx.signal);
      ctx.log.info('Tool processing data');
      await sleep(50, ctx.signal);
      ctx.log.info('Tool execution completed');
      return { content: [{ type: 'text' as const, text: 'Tool with logging executed successfully' }] };
    },
  );

  tool(
    server,
    'test_reconnection',
    {
      description:
        'Conformance (SEP-1699): closes its own SSE stream mid-call; the result arrives after the client reconnects',
      inputSchema: z.object({}),
    },
    async (_args, ctx) => {
      // The SDK offers closeSSEStream on Streamable HTTP with an event store (and a client >= 2025-11-25).
      const raw = ctx.raw as { closeSSEStream?: () => void } | undefined;
      raw?.closeSSEStream?.();
      await sleep(100, ctx.signal);
      return {
        content: [
          {
            type: 'text' as const,
            text: 'Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.',
          },
        ],
      };
    },
  );
}
