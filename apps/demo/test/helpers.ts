import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** The text blocks of a tool result, joined. */
export const textOf = (r: CallToolResult | Record<string, any>): string =>
  ((r.content ?? []) as Array<{ type: string; text?: string }>)
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
