import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { type MiddlewareLike, tether } from '@mcp-tether/core';

export const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const text = (r: any): string | undefined => r?.content?.[0]?.text;

/** A tethered McpServer whose SDK-level errors are collected (they must stay empty). */
export function makeServer(middlewares: MiddlewareLike[], errors: unknown[] = []) {
  const mcp = new McpServer({ name: 'cancel-test', version: '1.0.0' });
  const server = tether(mcp, middlewares, { onError: (e) => errors.push(e) });
  mcp.server.onerror = (e) => errors.push(e);
  return { server, errors };
}

/** Resolve when `pred()` becomes true (polled), or reject after `timeoutMs`. */
export async function until(pred: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await pause(2);
  }
}

/** p-th percentile (0..100) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
