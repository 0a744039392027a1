/**
 * corpus.reindex (seed 004's example) in the demo: over a real stdio child process started with
 * `--inline-ms 200` the call is answered with a job handle within seconds; the indexed file list
 * grows at job://{jobId}/partial; jobs.status brings the result. Also on a 2026-07-28 request
 * (the demo's v2 factory, same middleware instances).
 */
import { fileURLToPath } from 'node:url';
import { connectStdio } from '@mcp-tether/testing';
import { connectV2 } from '@mcp-tether/testing/v2';
import { expect, it } from 'vitest';
import { createDemoApp } from '../src/server.js';
import { textOf } from './helpers.js';

async function follow(kit: { callTool(name: string, args: Record<string, unknown>): Promise<any> }, jobId: string) {
  for (let i = 0; i < 30; i++) {
    const r = await kit.callTool('jobs.status', { jobId, waitMs: 2_000 });
    if (r.structuredContent.status !== 'working') return r;
  }
  throw new Error('the job never finished');
}

it('stdio, --inline-ms 200: a job handle, the partial list, the result', async () => {
  const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
  const kit = await connectStdio(process.execPath, [
    '--import',
    import.meta.resolve('tsx'),
    bin,
    '--stdio',
    '--quiet',
    '--inline-ms',
    '200',
  ]);
  try {
    const { tools } = await kit.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['corpus.reindex', 'jobs.status', 'jobs.cancel']));
    const first = await kit.callTool('corpus.reindex', { files: 40, delayMs: 25 }, { progressToken: 'r' });
    const handle = first.structuredContent as any;
    expect(handle.status).toBe('working');
    expect(textOf(first)).toContain('jobs.status');
    await kit.client.subscribeResource({ uri: handle.partialUri });
    const done = await follow(kit, handle.jobId);
    expect(done.structuredContent.status).toBe('completed');
    expect(textOf(done)).toBe('Reindexed 40 documents.');
    const partial = await kit.client.readResource({ uri: handle.partialUri });
    const files = (partial.contents[0] as any).text.split('\n').filter(Boolean);
    expect(files).toHaveLength(40);
    expect(files[39]).toBe('doc-000040.md');
    expect(kit.wire.notifications('notifications/resources/updated').length).toBeGreaterThan(0);
    // a short run stays a plain call
    expect(textOf(await kit.callTool('corpus.reindex', { files: 2, delayMs: 0 }))).toBe('Reindexed 2 documents.');
  } finally {
    await kit.close();
  }
});

it('2026-07-28 requests share the jobs of the process (a fresh server per request)', async () => {
  const app = createDemoApp({ inlineMs: 100 });
  const kit = await connectV2(() => app.createModernServer(), {
    era: 'modern',
    authInfo: { token: 't', clientId: 'demo-user', scopes: [] },
  });
  try {
    const first = await kit.callTool('corpus.reindex', { files: 20, delayMs: 20 });
    const handle = (first as any).structuredContent;
    expect(handle.status).toBe('working');
    const done = await follow(kit as never, handle.jobId);
    expect(textOf(done)).toBe('Reindexed 20 documents.');
  } finally {
    await kit.close();
    await app.stack.drain(1_000);
  }
});
