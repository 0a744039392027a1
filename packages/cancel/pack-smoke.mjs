// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): one shared
// cancel() instance; on every era a per-tool deadline answers TIMEOUT, aborts the signal with
// DeadlineExceeded and runs the ctx.defer cleanup once; on 2026-07-28 (a fresh server per request)
// a call whose response stream the client closes is aborted with Disconnected and cleaned up.
import { tether } from '@mcp-tether/core';
import { cancel, sleep, DeadlineExceeded, Disconnected } from '@mcp-tether/cancel';

export default async function smoke(sdk) {
  const c = cancel({ timeouts: { slow: 100 } });
  const reasons = [];
  let cleaned = 0;
  let entered = 0;
  const makeServer = () => {
    const server = tether(sdk.createServer(), [c]);
    const body = async (_args, ctx) => {
      entered++;
      ctx.defer(() => void cleaned++);
      await sleep(5_000, ctx.signal).catch((e) => {
        reasons.push(e);
        throw e;
      });
      return { content: [{ type: 'text', text: 'too slow to see' }] };
    };
    server.registerTool('slow', { inputSchema: sdk.schema({}) }, body);
    server.registerTool('wait', { inputSchema: sdk.schema({}) }, body);
    return server;
  };
  const until = async (what, pred) => {
    for (let i = 0; i < 500 && !pred(); i++) await new Promise((r) => setTimeout(r, 10));
    if (!pred())
      throw new Error(
        `timed out waiting for ${what}: ${JSON.stringify({ cleaned, entered, inFlight: c.inFlight, reasons: reasons.map(String) })}`,
      );
  };
  let cleanups = 0;
  for (const era of sdk.eras) {
    const client = await sdk.connect(makeServer, era);
    const r = await client.call('slow');
    await until('the cleanup', () => cleaned === cleanups + 1);
    cleanups++;
    if (!(r.isError === true && r.structuredContent?.code === 'TIMEOUT'))
      throw new Error(`${era}: not a TIMEOUT refusal: ${JSON.stringify(r)}`);
    if (!(reasons.at(-1) instanceof DeadlineExceeded))
      throw new Error(`${era}: aborted with ${reasons.at(-1)}, not DeadlineExceeded`);
    if (era === 'modern') {
      // the client cancels a call by closing its response stream
      const ac = new AbortController();
      const before = entered;
      const pending = client.call('wait', {}, { signal: ac.signal }).catch(() => 'aborted');
      await until('the call to start', () => entered === before + 1);
      ac.abort();
      await until('the cleanup after the disconnect', () => cleaned === cleanups + 1 && c.inFlight === 0);
      cleanups++;
      if ((await pending) !== 'aborted') throw new Error(`${era}: the aborted call resolved`);
      if (!(reasons.at(-1) instanceof Disconnected))
        throw new Error(`${era}: aborted with ${reasons.at(-1)}, not Disconnected`);
    }
    await client.close();
  }
  await until('no call in flight', () => c.inFlight === 0);
}
