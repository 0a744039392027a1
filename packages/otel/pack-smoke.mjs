// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): otel() outermost with
// only @opentelemetry/api installed (no SDK: the API's no-op). Calls go through untouched.
import { tether } from '@mcp-tether/core';
import { instrumentClient, otel } from '@mcp-tether/otel';

if (typeof instrumentClient !== 'function') throw new Error('instrumentClient is not exported');

export default async function smoke(sdk) {
  const telemetry = otel();
  const makeServer = () => {
    const server = tether(sdk.createServer(), [telemetry]);
    server.registerTool('echo', { inputSchema: sdk.schema({}) }, async (_args, ctx) => ({
      content: [{ type: 'text', text: ctx.meta.traceparent === undefined ? 'no trace context' : 'traced' }],
    }));
    return server;
  };
  for (const era of sdk.eras) {
    const client = await sdk.connect(makeServer, era);
    const r = await client.call('echo', {});
    await client.close();
    if (r.content[0].text !== 'no trace context') throw new Error(`${era}: unexpected ${JSON.stringify(r)}`);
  }
}
