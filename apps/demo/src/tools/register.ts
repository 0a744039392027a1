/**
 * One registration API for both SDK lines: the demo's tools are defined once and registered on a
 * v1 `McpServer` (`@modelcontextprotocol/sdk`, 2025-era sessions) and on a v2 `McpServer`
 * (`@modelcontextprotocol/server`, 2026-07-28 requests) alike. Schemas are `z.object(...)`, which
 * both lines accept as `inputSchema` (v1 as a zod schema, v2 as a Standard Schema with JSON Schema).
 */
import { handler, type CallContext, type HandlerOutput } from '@mcp-tether/core';
import type { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import type { z } from 'zod';

/** A server of either SDK line (already wrapped with `tether()`). */
export type DemoServer = McpServerV1 | McpServerV2;

/** Tool annotations (the same shape on both lines). */
export interface DemoToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A tool's config: `inputSchema` is a `z.object(...)` (use `z.object({})` for no arguments). */
export interface DemoToolConfig<S extends z.ZodObject> {
  title?: string;
  description?: string;
  inputSchema: S;
  annotations?: DemoToolAnnotations;
}

/** A text tool result (structurally the `CallToolResult` of both lines). */
export interface TextResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  isError?: boolean;
}

/** `"..."` → a one-block text result. */
export const text = (t: string): TextResult => ({ content: [{ type: 'text', text: t }] });

/** The part of `McpServer` both lines share, loosely typed (the typed face is {@link tool}). */
interface LooseServer {
  registerTool(name: string, config: unknown, cb: unknown): unknown;
  registerPrompt(name: string, config: unknown, cb: unknown): unknown;
}

/**
 * Register a tool on a server of either SDK line. `fn` gets the parsed arguments (typed from the
 * schema) and the tether call context, and may be an async generator (`yield progress(...)`) or
 * return an `input_required` outcome (served by `@mcp-tether/mrtr`).
 */
export function tool<S extends z.ZodObject, R>(
  server: DemoServer,
  name: string,
  config: DemoToolConfig<S>,
  fn: (args: z.output<S>, ctx: CallContext) => HandlerOutput<R>,
): void {
  (server as unknown as LooseServer).registerTool(name, config, handler(fn));
}

/** Register a prompt without arguments on a server of either SDK line. */
export function prompt<R>(
  server: DemoServer,
  name: string,
  config: { title?: string; description?: string },
  fn: () => Promise<R>,
): void {
  (server as unknown as LooseServer).registerPrompt(name, config, fn);
}
