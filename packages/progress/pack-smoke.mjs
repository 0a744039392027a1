// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): a 10 000-step
// progress loop becomes at most ~100 strictly increasing notifications ending at 10 000.
import { tether } from '@mcp-tether/core';
import { progress, progressMiddleware } from '@mcp-tether/progress';

export default async function smoke(sdk) {
  const makeServer = () => {
    const server = tether(sdk.createServer(), [progressMiddleware()]);
    server.registerTool('count', { inputSchema: sdk.schema({}) }, async function* () {
      for (let i = 1; i <= 10_000; i++) yield progress({ progress: i, total: 10_000 });
      return { content: [{ type: 'text', text: 'counted' }] };
    });
    return server;
  };
  for (const era of sdk.eras) {
    const client = await sdk.connect(makeServer, era);
    const seen = [];
    const r = await client.call('count', {}, { onprogress: (p) => seen.push(p.progress) });
    await client.close();
    const increasing = seen.every((v, i) => i === 0 || v > seen[i - 1]);
    if (
      r.content[0].text !== 'counted' ||
      seen.length < 2 ||
      seen.length > 101 ||
      seen.at(-1) !== 10_000 ||
      !increasing
    ) {
      throw new Error(`${era}: unexpected ${JSON.stringify({ r, seen })}`);
    }
  }
}
