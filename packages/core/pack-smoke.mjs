// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era, from the packed
// tarball in an empty project): tether() a real McpServer with one middleware that stamps the
// result and rewrites progress events, and a generator handler; one call per era proves both ran.
import { tether, progressEvent } from '@mcp-tether/core';
import { z } from 'zod';

export default async function smoke(sdk) {
  const stamp = {
    name: 'stamp',
    async handle(ctx, next) {
      const result = await next();
      return { ...result, content: [...result.content, { type: 'text', text: `era=${ctx.era} via=${ctx.host.sdk}` }] };
    },
    onEvent(_ctx, event, next) {
      if (event.type !== 'progress') return next(event);
      return next({
        type: 'notification',
        notification: { method: 'notifications/progress', params: { progress: event.progress, total: event.total } },
      });
    },
  };
  const makeServer = () => {
    const server = tether(sdk.createServer(), [stamp]);
    server.registerTool(
      'add',
      { inputSchema: sdk.schema({ a: z.number(), b: z.number() }) },
      async function* ({ a, b }) {
        yield progressEvent(50, 100);
        return { content: [{ type: 'text', text: String(a + b) }] };
      },
    );
    return server;
  };
  for (const era of sdk.eras) {
    const client = await sdk.connect(makeServer, era);
    const progress = [];
    const r = await client.call('add', { a: 2, b: 3 }, { onprogress: (p) => progress.push(p.progress) });
    await client.close();
    const got = JSON.stringify({ texts: r.content.map((c) => c.text), progress: progress.join() });
    const want = JSON.stringify({ texts: ['5', `era=${era} via=${sdk.line}`], progress: '50' });
    if (got !== want) throw new Error(`${era}: unexpected ${got}`);
  }
}
