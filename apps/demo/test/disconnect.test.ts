/**
 * A client that goes away cancels its call on the 2026-07-28 leg (spec: on Streamable HTTP,
 * closing the request's response stream IS the cancellation), whether it leaves before the server
 * wrote a byte of the response or while the response is streaming. On the 2025-era stateful leg a
 * dropped POST is NOT a cancel (spec 2025-11-25: a disconnect SHOULD NOT be read as one; the event
 * store lets the client resume), but ending the session is.
 *
 * Real HTTP on 127.0.0.1: node:http and fetch clients, no SDK client in between, so the test
 * controls the exact moment the connection drops.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { sleep } from '@mcp-tether/cancel';
import { abortReason, type CallContext } from '@mcp-tether/core';
import { connectHttp } from '@mcp-tether/testing';
import { progress } from '@mcp-tether/progress';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDemoApp, startHttp, type DemoApp, type RunningHttp } from '../src/index.js';
import { text, tool, type DemoServer } from '../src/tools/register.js';

/** What the server saw of one call of `test.slow`. */
interface Seen {
  started: boolean;
  /** Set in the handler's `finally`: how the call ended. */
  ended?: { aborted: boolean; kind: string | undefined };
}

/**
 * The demo app plus one extra tool, `test.slow`: waits up to 60 s on the call's signal (optionally
 * yielding progress first, so the response stream starts), and records in `finally` whether the
 * signal aborted and why.
 */
function slowApp() {
  const app: DemoApp = createDemoApp();
  const seen: Seen = { started: false };
  const addSlow = <S extends DemoServer>(server: S): S => {
    tool(
      server,
      'test.slow',
      { inputSchema: z.object({ streamFirst: z.boolean().default(false) }) },
      async function* ({ streamFirst }, ctx: CallContext) {
        seen.started = true;
        try {
          if (streamFirst) yield progress(1);
          await sleep(60_000, ctx.signal);
          return text('finished');
        } finally {
          seen.ended = { aborted: ctx.signal.aborted, kind: abortReason(ctx.signal)?.kind };
        }
      },
    );
    return server;
  };
  return {
    app,
    seen,
    createServer: () => addSlow(app.createServer()),
    createModernServer: () => addSlow(app.createModernServer()),
  };
}

/** Poll `check` every 20 ms for at most `ms` ms (generous: the machine is shared). */
async function until(check: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

const V = '2026-07-28';
const meta = {
  'io.modelcontextprotocol/protocolVersion': V,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'disconnect-test', version: '0' },
};
const modernCall = (id: number, args: Record<string, unknown>, extraMeta: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'test.slow', arguments: args, _meta: { ...meta, ...extraMeta } },
});
const modernHeaders = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': V,
  'mcp-method': 'tools/call',
  'mcp-name': 'test.slow',
};

let http: RunningHttp | undefined;
afterEach(async () => {
  await http?.close();
  http = undefined;
});

describe('2026-07-28: the client going away cancels the call (Disconnected)', () => {
  it('before the first byte of the response (node:http, socket destroyed while the handler waits)', async () => {
    const s = slowApp();
    http = await startHttp({ port: 0, createServer: s.createServer, createModernServer: s.createModernServer });

    let responded = false;
    const req: ClientRequest = httpRequest(
      http.url,
      { method: 'POST', headers: modernHeaders, agent: false },
      (res) => {
        responded = true;
        res.resume();
      },
    );
    req.on('error', () => {}); // ECONNRESET / socket hang up: we hung up ourselves
    req.end(JSON.stringify(modernCall(1, {})));

    expect(await until(() => s.seen.started)).toBe(true);
    expect(s.app.stack.cancellation.inFlight).toBe(1);
    // The handler is waiting, nothing was written: no status line, no headers.
    expect(responded).toBe(false);
    req.destroy();

    expect(await until(() => s.seen.ended !== undefined)).toBe(true);
    expect(responded).toBe(false);
    expect(s.seen.ended).toEqual({ aborted: true, kind: 'disconnect' });
    expect(await until(() => s.app.stack.cancellation.inFlight === 0)).toBe(true);
  });

  it('before the first byte of the response (fetch + AbortController)', async () => {
    const s = slowApp();
    http = await startHttp({ port: 0, createServer: s.createServer, createModernServer: s.createModernServer });

    const abort = new AbortController();
    const pending = fetch(http.url, {
      method: 'POST',
      headers: modernHeaders,
      body: JSON.stringify(modernCall(2, {})),
      signal: abort.signal,
    });
    let responded = false;
    const outcome = pending.then(
      () => {
        responded = true;
        return 'response';
      },
      (e: unknown) => (e instanceof Error ? e.name : String(e)),
    );

    expect(await until(() => s.seen.started)).toBe(true);
    expect(responded).toBe(false);
    abort.abort();
    expect(await outcome).toBe('AbortError');

    expect(await until(() => s.seen.ended !== undefined)).toBe(true);
    expect(s.seen.ended).toEqual({ aborted: true, kind: 'disconnect' });
    expect(await until(() => s.app.stack.cancellation.inFlight === 0)).toBe(true);
  });

  it('after the response stream started (SSE progress received, then the client aborts)', async () => {
    const s = slowApp();
    http = await startHttp({ port: 0, createServer: s.createServer, createModernServer: s.createModernServer });

    const abort = new AbortController();
    const res = await fetch(http.url, {
      method: 'POST',
      headers: modernHeaders,
      body: JSON.stringify(modernCall(3, { streamFirst: true }, { progressToken: 'p-1' })),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('notifications/progress');
    abort.abort();
    await reader.read().catch(() => {});

    expect(await until(() => s.seen.ended !== undefined)).toBe(true);
    expect(s.seen.ended).toEqual({ aborted: true, kind: 'disconnect' });
  });

  it('a call that completes is not reported as aborted (control)', async () => {
    const s = slowApp();
    http = await startHttp({ port: 0, createServer: s.createServer, createModernServer: s.createModernServer });
    const res = await fetch(http.url, {
      method: 'POST',
      headers: { ...modernHeaders, 'mcp-name': 'job.quiet' },
      body: JSON.stringify({
        ...modernCall(4, { ms: 10 }),
        params: { name: 'job.quiet', arguments: { ms: 10 }, _meta: meta },
      }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('done');
    expect(s.app.stack.cancellation.inFlight).toBe(0);
  });
});

describe('2025-era stateful sessions: a dropped POST is not a cancel, ending the session is', () => {
  it('the call survives its POST being dropped before any byte, then ends Disconnected on DELETE', async () => {
    const s = slowApp();
    http = await startHttp({ port: 0, createServer: s.createServer, retryIntervalMs: 50 });
    // A real SDK client opens the session; the call itself goes on a raw POST we can cut.
    const kit = await connectHttp(http.url);
    try {
      const sid = kit.transport.sessionId!;
      const req = httpRequest(
        http.url,
        {
          method: 'POST',
          agent: false,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sid,
            'mcp-protocol-version': '2025-11-25',
          },
        },
        (res) => res.resume(),
      );
      req.on('error', () => {});
      req.end(
        JSON.stringify({ jsonrpc: '2.0', id: 100, method: 'tools/call', params: { name: 'test.slow', arguments: {} } }),
      );
      expect(await until(() => s.seen.started)).toBe(true);
      req.destroy();

      // Spec 2025-11-25 (transports): a disconnect SHOULD NOT be read as a cancel; the client may resume.
      await new Promise((r) => setTimeout(r, 500));
      expect(s.seen.ended).toBeUndefined();
      expect(s.app.stack.cancellation.inFlight).toBe(1);

      // Ending the session closes its transport: the call aborts with Disconnected.
      await kit.transport.terminateSession();
      expect(await until(() => s.seen.ended !== undefined)).toBe(true);
      expect(s.seen.ended).toEqual({ aborted: true, kind: 'disconnect' });
    } finally {
      await kit.close();
    }
  });
});
