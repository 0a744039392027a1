/**
 * What a preset tool handler may return, and how it becomes an MCP `CallToolResult`; the one
 * wrapper every registered handler goes through (results shaped, `ctx.ask` questions served).
 */
import { type CallContext, isAsyncGenerator, isInputRequired } from '@mcp-tether/core';
import { AskPending, newRun } from './ask.js';

/** A text or structured content block, as MCP `CallToolResult.content` holds them. */
export interface ContentBlock {
  [key: string]: unknown;
  type: string;
}

/** An MCP `CallToolResult` (the same shape on both SDK lines). */
export interface ToolResult {
  [key: string]: unknown;
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * What a handler may return: a full {@link ToolResult}; a string (one text block); a plain object
 * (a text block with its JSON, and the object as `structuredContent`); a number, boolean, array or
 * `null` (a text block with its JSON); nothing (no content).
 */
export type ToolReturn = ToolResult | string | number | boolean | null | undefined | object;

/** Is `value` already a `CallToolResult` (it has a `content` array)? */
function isToolResult(value: object): value is ToolResult {
  return Array.isArray((value as { content?: unknown }).content);
}

/**
 * Turn what a handler returned into a `CallToolResult` (see {@link ToolReturn}); an
 * `input_required` outcome (from `@mcp-tether/mrtr`'s `requireInput`) passes through unchanged.
 */
export function toResult(value: unknown): unknown {
  if (typeof value === 'string') return { content: [{ type: 'text', text: value }] };
  if (value === undefined) return { content: [] };
  if (value === null || typeof value !== 'object') return { content: [{ type: 'text', text: JSON.stringify(value) }] };
  if (isToolResult(value) || isInputRequired(value)) return value;
  const text = JSON.stringify(value) ?? '';
  if (Array.isArray(value)) return { content: [{ type: 'text', text }] };
  return { content: [{ type: 'text', text }], structuredContent: value };
}

/** A question asked with `ctx.ask`/`ctx.confirm` that has no answer yet: served as mrtr's `input_required`. */
function settle(error: unknown): unknown {
  if (error instanceof AskPending) return error.outcome;
  throw error;
}

async function* shapedGenerator(gen: AsyncGenerator<unknown, unknown, undefined>): AsyncGenerator<unknown, unknown> {
  try {
    return toResult(yield* gen);
  } catch (error) {
    return settle(error);
  }
}

/**
 * Wrap a preset handler for `registerTool`: its return value shaped by {@link toResult}, a pending
 * `ctx.ask` turned into the question, generators kept generators (core drives them: `yield
 * progress(...)`, abort races, `return()` on abort reach the user's generator through `yield*`).
 */
export function shapeHandler<A>(
  fn: (args: A, ctx: CallContext) => unknown,
): (args: A, ctx: CallContext) => AsyncGenerator<unknown, unknown> | Promise<unknown> {
  return (args, ctx) => {
    newRun(ctx);
    let out: unknown;
    try {
      out = fn(args, ctx);
    } catch (error) {
      return Promise.resolve().then(() => settle(error));
    }
    if (isAsyncGenerator(out)) return shapedGenerator(out);
    return Promise.resolve(out).then(toResult, settle);
  };
}
