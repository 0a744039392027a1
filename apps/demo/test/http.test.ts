/** The demo's Streamable HTTP front: sessions, resumability, DNS-rebinding protection. */
import { connectHttp } from '@mcp-tether/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDemoApp, startHttp, type RunningHttp } from '../src/index.js';
import { textOf } from './helpers.js';

let http: RunningHttp;
beforeEach(async () => {
  http = await startHttp({
    port: 0,
    createServer: createDemoApp({ conformanceFixtures: true }).createServer,
    retryIntervalMs: 50,
  });
});
afterEach(async () => {
  await http.close();
});

const init = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};
const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(http.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });

describe('Streamable HTTP', () => {
  it('listens on loopback and opens one session per initialize', async () => {
    expect(http.url.hostname).toBe('127.0.0.1');
    const a = await connectHttp(http.url);
    const b = await connectHttp(http.url);
    expect(http.sessions.size).toBe(2);
    expect(textOf(await a.callTool('test_simple_text', {}))).toContain('simple text');
    await a.close();
    await b.close();
  });

  it('answers an unknown session with 404, a missing one with 400', async () => {
    const unknown = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { 'mcp-session-id': 'no-such-session' },
    );
    expect(unknown.status).toBe(404);
    const missing = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(missing.status).toBe(400);
    const get = await fetch(http.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'no-such-session' },
    });
    expect(get.status).toBe(404);
  });

  it('ends a session on DELETE; the id is then unknown (404)', async () => {
    const kit = await connectHttp(http.url);
    const sid = kit.transport.sessionId!;
    expect(http.sessions.has(sid)).toBe(true);
    await kit.transport.terminateSession();
    expect(http.sessions.has(sid)).toBe(false);
    const after = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, { 'mcp-session-id': sid });
    expect(after.status).toBe(404);
    await kit.close();
  });

  it('rejects a foreign Host or Origin (DNS rebinding) and accepts loopback ones', async () => {
    // fetch cannot set Host; node:http can.
    const { request } = await import('node:http');
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          http.url,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(init));
      });
    expect(await status({ host: 'evil.example.com' })).toBe(403);
    expect(await status({ host: `evil.example.com:${http.port}`, origin: 'http://evil.example.com' })).toBe(403);
    expect(await status({ origin: 'http://evil.example.com' })).toBe(403);
    expect(await status({ origin: 'null' })).toBe(403);
    expect(await status({ host: `localhost:${http.port}`, origin: `http://localhost:${http.port}` })).toBe(200);
    expect(await status({})).toBe(200);
  });

  it('answers a malformed body with a JSON-RPC parse error', async () => {
    const res = await fetch(http.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it('test_reconnection: the result survives the closed SSE stream (resumed with Last-Event-ID)', async () => {
    const kit = await connectHttp(http.url);
    const r = await kit.callTool('test_reconnection', {});
    expect(textOf(r)).toContain('Reconnection test completed successfully');
    const response = kit.wire
      .fromServer()
      .find((m) => m.message.result && textOf(m.message.result).includes('Reconnection test'));
    // The POST stream was closed mid-call, so the result came on the resumed GET stream.
    expect(response?.stream?.kind).toBe('get');
    await kit.close();
  });
});
