// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): a tool silent for
// 700 ms, called with a 400 ms client timeout that only the heartbeats keep alive (the client
// opted in with resetTimeoutOnProgress). One heartbeat() instance serves every server.
import { tether } from '@mcp-tether/core';
import { heartbeat } from '@mcp-tether/heartbeat';

export default async function smoke(sdk) {
  const hb = heartbeat({ silenceMs: 100 });
  const makeServer = () => {
    const server = tether(sdk.createServer(), [hb]);
    server.registerTool('quiet', { inputSchema: sdk.schema({}) }, async () => {
      await new Promise((r) => setTimeout(r, 700));
      return { content: [{ type: 'text', text: 'finished' }] };
    });
    return server;
  };
  for (const era of sdk.eras) {
    const client = await sdk.connect(makeServer, era);
    const beats = [];
    const r = await client.call(
      'quiet',
      {},
      { timeout: 400, resetTimeoutOnProgress: true, onprogress: (p) => beats.push(p) },
    );
    await client.close();
    if (r.content[0].text !== 'finished' || beats.length < 2 || !beats.every((p) => /still working/.test(p.message))) {
      throw new Error(`${era}: unexpected ${JSON.stringify({ r, beats })}`);
    }
  }
}
