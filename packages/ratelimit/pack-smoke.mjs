// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): a tool with a burst
// of 2; the third call is refused with -32029 RATE_LIMITED and a retry hint. One rateLimit() instance
// serves every server.
import { tether } from '@mcp-tether/core';
import { rateLimit } from '@mcp-tether/ratelimit';

export default async function smoke(sdk) {
  for (const era of sdk.eras) {
    const limiter = rateLimit({ perTool: { burst: 2, perSecond: 0.01 } });
    const makeServer = () => {
      const server = tether(sdk.createServer(), [limiter]);
      server.registerTool('ping', { inputSchema: sdk.schema({}) }, async () => ({
        content: [{ type: 'text', text: 'pong' }],
      }));
      return server;
    };
    const client = await sdk.connect(makeServer, era);
    const ok = [await client.call('ping'), await client.call('ping')];
    const refused = await client.call('ping').then(
      () => undefined,
      (e) => e,
    );
    await client.close();
    if (
      !ok.every((r) => r.content[0].text === 'pong') ||
      refused?.code !== -32029 ||
      refused.data?.code !== 'RATE_LIMITED' ||
      !(refused.data.retryAfterSeconds > 0)
    ) {
      throw new Error(
        `${era}: unexpected ${JSON.stringify({ ok, refused: refused && { code: refused.code, data: refused.data } })}`,
      );
    }
  }
}
