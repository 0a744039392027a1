/**
 * The SDK transport classes the front uses, loaded once per SDK line and checked against core's
 * seam table (`SDK_SEAMS` of `@mcp-tether/core`): a release that renamed a private field the front
 * reads fails loudly, naming the installed SDK version (`SdkSeamError`), instead of quietly
 * switching off bounded streams or the cancelled-stream fix.
 */
import { assertSeams } from '@mcp-tether/core';
import type { TransportCtor } from './sdk.js';

/** The SDK line of a 2025-era session's server. */
export type SdkLine = 'v1' | 'v2';

const loaded = new Map<SdkLine, Promise<TransportCtor>>();

async function load(line: SdkLine): Promise<TransportCtor> {
  const Transport =
    line === 'v2'
      ? (
          (await import('@modelcontextprotocol/server')) as unknown as {
            WebStandardStreamableHTTPServerTransport: TransportCtor;
          }
        ).WebStandardStreamableHTTPServerTransport
      : (
          (await import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js')) as unknown as {
            WebStandardStreamableHTTPServerTransport: TransportCtor;
          }
        ).WebStandardStreamableHTTPServerTransport;
  assertSeams(
    line === 'v2' ? 'webTransportV2' : 'webTransportV1',
    new Transport({ sessionIdGenerator: () => 'seam-check' }),
  );
  if (line === 'v2') {
    const m = (await import('@modelcontextprotocol/server')) as unknown as {
      PerRequestHTTPServerTransport?: new (options: Record<string, unknown>) => unknown;
    };
    assertSeams(
      'perRequestTransportV2',
      m.PerRequestHTTPServerTransport ? new m.PerRequestHTTPServerTransport({}) : {},
    );
  }
  return Transport;
}

/**
 * The session transport class of `line`, loaded and checked once (a failed check is kept: every
 * session of that line then fails with the same error).
 * @throws SdkSeamError when the installed SDK lacks a field the front relies on
 */
export function sessionTransport(line: SdkLine): Promise<TransportCtor> {
  let p = loaded.get(line);
  if (p === undefined) {
    p = load(line);
    loaded.set(line, p);
  }
  return p;
}

/** The SDK line of a server (SDK 2.x servers have `server._wrapHandler`). */
export function lineOf(server: unknown): SdkLine {
  const inner = (server as { server?: { _wrapHandler?: unknown } }).server;
  return typeof inner?._wrapHandler === 'function' ? 'v2' : 'v1';
}

/**
 * Check the transports of every SDK line that is installed and that the options use (`listen()`
 * runs it before it takes a request).
 * @throws SdkSeamError as {@link sessionTransport}
 */
export async function checkSeams(lines: readonly SdkLine[]): Promise<void> {
  for (const line of lines) {
    try {
      await import(
        line === 'v2' ? '@modelcontextprotocol/server' : '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
      );
    } catch {
      continue; // that SDK is not installed: nothing of it can be served, nothing to check
    }
    await sessionTransport(line);
  }
}
