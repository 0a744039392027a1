/** `handler()` types `registerTool` callbacks of both SDK lines (checked by `tsc`; the run registers them). */
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { type CallContext, handler, progressEvent, tether } from '../src/index.js';

describe('handler() typing', () => {
  it('v1: raw shape args, CallContext, generator and input_required outcomes', () => {
    const server = tether(new McpServerV1({ name: 't', version: '1' }), []);
    server.registerTool(
      'gen',
      { inputSchema: { n: z.number() } },
      handler(async function* (args, ctx) {
        expectTypeOf(args).toEqualTypeOf<{ n: number }>();
        expectTypeOf(ctx).toEqualTypeOf<CallContext>();
        yield progressEvent(1);
        return { content: [{ type: 'text' as const, text: String(args.n) }] };
      }),
    );
    const tool = server.registerTool(
      'ask',
      { inputSchema: { n: z.number() } },
      handler(async (args, ctx) => {
        if (!ctx.inputResponses)
          return { resultType: 'input_required' as const, inputRequests: {}, requestState: { n: args.n } };
        return { content: [] };
      }),
    );
    expect(tool.enabled).toBe(true);
  });

  it('v2: z.object args (and raw shape), CallContext, generator and input_required outcomes', () => {
    const server = tether(new McpServerV2({ name: 't', version: '1' }), []);
    server.registerTool(
      'gen',
      { inputSchema: z.object({ n: z.number() }) },
      handler(async function* (args, ctx) {
        expectTypeOf(args).toEqualTypeOf<{ n: number }>();
        expectTypeOf(ctx).toEqualTypeOf<CallContext>();
        yield progressEvent(1);
        return { content: [{ type: 'text' as const, text: String(args.n) }] };
      }),
    );
    server.registerTool(
      'raw-shape',
      { inputSchema: { s: z.string() } },
      handler(async (args) => ({ content: [{ type: 'text' as const, text: args.s }] })),
    );
    const tool = server.registerTool(
      'ask',
      { inputSchema: z.object({ n: z.number() }) },
      handler(async (args, ctx) => {
        if (!ctx.inputResponses)
          return { resultType: 'input_required' as const, inputRequests: {}, requestState: { n: args.n } };
        return { content: [] };
      }),
    );
    expect(tool.enabled).toBe(true);
  });
});
