/**
 * Handle mode over real Streamable HTTP on 127.0.0.1 (SDK 1.x server and client): stateful
 * sessions (resources/updated on the subscriber's standalone GET stream only; another session sees
 * nothing) and stateless 2025 HTTP (a fresh server per request: the job is still followed).
 */
import { cancel } from '@mcp-tether/cancel';
import { tether } from '@mcp-tether/core';
import { connectHttp, firstText, serveHttp, until } from '@mcp-tether/testing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { jobs } from '../src/index.js';
import { handleOf, newProbe, registerTools } from './fixtures.js';

describe('jobs over Streamable HTTP (SDK 1.x)', () => {
  it('stateful: the subscriber gets resources/updated on its GET stream, another session nothing', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 100, notifyIntervalMs: 30 });
    const c = cancel();
    const harness = await serveHttp(() => {
      const server = tether(new McpServer({ name: 'jobs-http', version: '0.0.0' }), [c, j]);
      return registerTools(server as never, j, probe) as never;
    });
    const a = await connectHttp(harness.url);
    const b = await connectHttp(harness.url);
    try {
      const h = handleOf(await a.callTool('corpus.reindex', { files: 30, delayMs: 20 }));
      expect(h.status).toBe('working');
      await a.client.subscribeResource({ uri: h.partialUri! });
      await expect(b.client.subscribeResource({ uri: h.partialUri! })).rejects.toThrow(/not found/i);
      expect((await b.callTool('jobs.status', { jobId: h.jobId })).structuredContent).toMatchObject({
        code: 'JOB_NOT_FOUND',
      });
      let done: any;
      for (let i = 0; i < 20; i++) {
        done = await a.callTool('jobs.status', { jobId: h.jobId, waitMs: 2_000 });
        if (handleOf(done).status !== 'working') break;
      }
      expect(firstText(done)).toBe('indexed 30 files');
      await until(() => a.wire.notifications('notifications/resources/updated').length > 0, 3_000, 'an update');
      const updates = a.wire.notifications('notifications/resources/updated');
      expect(updates.every((m) => m.message.params?.uri === h.partialUri && m.stream?.kind === 'get')).toBe(true);
      expect(b.wire.notifications('notifications/resources/updated')).toEqual([]);
    } finally {
      await a.close();
      await b.close();
      await harness.close();
    }
  });

  it('stateless 2025 HTTP: a fresh server per request, the job is still followed to its result', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 100 });
    const c = cancel();
    const harness = await serveHttp(
      () => {
        const server = tether(new McpServer({ name: 'jobs-http', version: '0.0.0' }), [c, j]);
        return registerTools(server as never, j, probe) as never;
      },
      { stateful: false },
    );
    const kit = await connectHttp(harness.url);
    try {
      const h = handleOf(await kit.callTool('corpus.reindex', { files: 20, delayMs: 20 }));
      expect(h.status).toBe('working');
      let done: any;
      for (let i = 0; i < 20; i++) {
        done = await kit.callTool('jobs.status', { jobId: h.jobId, waitMs: 2_000 });
        if (handleOf(done).status !== 'working') break;
      }
      expect(firstText(done)).toBe('indexed 20 files');
      const part = await kit.client.readResource({ uri: `${h.partialUri}?offset=18` });
      expect((part.contents[0] as any).text).toBe('doc-0019.md\ndoc-0020.md\n');
      // nothing rode the creating request's stream after its response, and nothing went astray
      expect(probe.finallies.get(h.jobId)).toBe(1);
    } finally {
      await kit.close();
      await harness.close();
    }
  });
});
