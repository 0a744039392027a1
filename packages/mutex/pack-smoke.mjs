// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): one shared
// mutex({ maxQueue: 0 }); two calls of a destructive tool while the first holds the lock: one
// runs, the other is refused BUSY, they never overlap. On 2026-07-28 each call gets a server of
// its own, which proves the lock lives on the middleware instance.
import { tether } from '@mcp-tether/core';
import { mutex } from '@mcp-tether/mutex';

export default async function smoke(sdk) {
  const m = mutex({ maxQueue: 0 });
  let inside = 0;
  let overlap = false;
  const makeServer = () => {
    const server = tether(sdk.createServer(), [m]);
    server.registerTool('wipe', { inputSchema: sdk.schema({}), annotations: { destructiveHint: true } }, async () => {
      inside++;
      if (inside > 1) overlap = true;
      await new Promise((r) => setTimeout(r, 100));
      inside--;
      return { content: [{ type: 'text', text: 'wiped' }] };
    });
    return server;
  };
  for (const era of sdk.eras) {
    const client = await sdk.connect(makeServer, era);
    let pair;
    if (era === 'legacy') {
      pair = await Promise.all([client.call('wipe'), client.call('wipe')]);
    } else {
      const held = client.call('wipe');
      for (let i = 0; i < 500 && m.stats().running === 0; i++) await new Promise((r) => setTimeout(r, 5));
      const refused = await client.call('wipe'); // arrives (on a server of its own) while the first holds
      pair = [await held, refused];
    }
    await client.close();
    const [first, second] = pair;
    if (
      !(first.content?.[0]?.text === 'wiped' && second.isError === true && second.structuredContent?.code === 'BUSY')
    ) {
      throw new Error(`${era}: unexpected ${JSON.stringify(pair)}`);
    }
  }
  const stats = m.stats();
  if (overlap || stats.acquired !== sdk.eras.length || stats.rejected !== sdk.eras.length) {
    throw new Error(`unexpected: ${JSON.stringify({ stats, overlap })}`);
  }
}
