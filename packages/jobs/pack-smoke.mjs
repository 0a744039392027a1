// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): one jobs()
// instance shared by every server (on 2026-07-28 a fresh server per request, so the job started on
// one request is followed on the next); a slow tool answers with a job handle, jobs.status brings
// its result, and (2025-era sessions) the partial resource reads.
import { tether, handler } from '@mcp-tether/core';
import { jobs } from '@mcp-tether/jobs';
import { z } from 'zod';

export default async function smoke(sdk) {
  const work = jobs({ tools: ['slow'], inlineMs: 50 });
  const makeServer = () => {
    const server = tether(sdk.createServer(), [work]);
    work.registerTools(server);
    server.registerTool(
      'slow',
      { inputSchema: sdk.schema({ n: z.number() }) },
      handler(async ({ n }, ctx) => {
        for (let i = 1; i <= n; i++) {
          await new Promise((r) => setTimeout(r, 20));
          await ctx.job?.append(`step ${i}\n`);
        }
        return { content: [{ type: 'text', text: `did ${n}` }] };
      }),
    );
    return server;
  };
  for (const era of sdk.eras) {
    const client = await sdk.connect(makeServer, era);
    const first = await client.call('slow', { n: 10 });
    const handle = first.structuredContent;
    let done;
    for (let i = 0; i < 20; i++) {
      done = await client.call('jobs.status', { jobId: handle.jobId, waitMs: 2000 });
      if (done.structuredContent.status !== 'working') break;
    }
    if (!(handle?.status === 'working' && done?.content?.[0]?.text === 'did 10')) {
      throw new Error(`${sdk.line} ${era}: ${JSON.stringify({ first, done })}`);
    }
    if (era === 'legacy') {
      const partial = await client.request('resources/read', { uri: handle.partialUri });
      if (partial.contents[0].text.split('\n').filter(Boolean).length !== 10)
        throw new Error(`${sdk.line} ${era}: partial ${JSON.stringify(partial)}`);
    }
    await client.close();
  }
}
