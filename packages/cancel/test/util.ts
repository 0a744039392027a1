import { type MiddlewareLike, tether } from '@mcp-tether/core';
import type { MatrixServer, SdkTarget } from '@mcp-tether/core/testing/matrix';

export const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const text = (r: any): string | undefined => r?.content?.[0]?.text;

/** A tethered McpServer of the target's SDK line whose SDK-level errors are collected (they must stay empty). */
export function makeServer(sdk: SdkTarget, middlewares: MiddlewareLike[], errors: unknown[] = []): { server: MatrixServer; errors: unknown[] } {
  const mcp = sdk.createServer({ name: 'cancel-test', version: '1.0.0' });
  const server = tether(mcp as never, middlewares, { onError: (e) => errors.push(e) }) as unknown as MatrixServer;
  mcp.server.onerror = (e: unknown) => errors.push(e);
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
