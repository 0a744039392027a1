/**
 * Issue 27: the front checks the private SDK fields it relies on through core's seam table, and an
 * SDK release that renamed one fails loudly, naming the installed version, instead of quietly
 * switching bounded streams or the cancelled-stream fix off. The "new release" is the real SDK
 * class with one field renamed (this file runs in its own module graph; each rename is undone).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SdkSeamError } from '@mcp-tether/core';
import { PerRequestHTTPServerTransport } from '@modelcontextprotocol/server';
import { WebStandardStreamableHTTPServerTransport as WebV1 } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createMcpHttp } from '../src/index.js';
import { v1Server, v2Server } from './fixtures/app.js';
import { init, post } from './helpers.js';

function rename(proto: object, from: string): () => void {
  const p = proto as Record<string, unknown>;
  const value = p[from];
  p[`${from}Renamed`] = value;
  delete p[from];
  return () => {
    p[from] = value;
    delete p[`${from}Renamed`];
  };
}

const undo: Array<() => void> = [];
afterAll(() => {
  for (const u of undo) u();
});

describe('the SDK seams, checked at attach', () => {
  // The installed SDKs pass: every other test file listen()s, and listen() checks. Here each line is
  // renamed before its first load (the check runs once per line and process).
  it('SDK 1.x without writeSSEEvent: listen() throws SdkSeamError naming 1.32.2; handle answers initialize with the same message', async () => {
    undo.push(rename(WebV1.prototype, 'writeSSEEvent'));
    const front = createMcpHttp({ legacy: () => v1Server() });
    const err = await front.listen(0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SdkSeamError);
    expect((err as SdkSeamError).message).toContain('@modelcontextprotocol/sdk version 1.32.2');
    expect((err as SdkSeamError).missing).toEqual([
      'WebStandardStreamableHTTPServerTransport.writeSSEEvent (function)',
    ]);
    // Through the Node handler (no listen()): the session cannot open, and the answer says why.
    const errors: Error[] = [];
    const served = createMcpHttp({ legacy: () => v1Server(), onError: (e) => errors.push(e) });
    const server = createServer(served.handle).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
      const r = await post(url, init(1));
      expect(r.status).toBe(500);
      const body = (await r.json()) as { error: { message: string } };
      expect(body.error.message).toContain('lacks WebStandardStreamableHTTPServerTransport.writeSSEEvent');
      expect(errors[0]).toBeInstanceOf(SdkSeamError);
    } finally {
      server.close();
      await served.close();
    }
  });

  it('SDK 2.x without PerRequestHTTPServerTransport.writeMessageFrame: listen() throws naming 2.4.0', async () => {
    undo.push(rename(PerRequestHTTPServerTransport.prototype, 'writeMessageFrame'));
    const front = createMcpHttp({ modern: () => v2Server() });
    const err = await front.listen(0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SdkSeamError);
    expect((err as SdkSeamError).message).toContain('@modelcontextprotocol/server version 2.4.0');
  });
});
