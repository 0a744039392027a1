// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): the preset's own
// servers (`app.createServer(line)`, what each session or request gets) with a locked counter and
// a question; 10 concurrent increments return 1..10, a confirmed reset sets 0.
import { createApp, sleep } from '@mcp-tether/server';

export default async function smoke(sdk) {
  let counter = 0;
  const app = createApp({ log: false, handleSignals: false, redisUrl: false })
    .tool('inc', { lock: 'counter' }, async (_args, ctx) => {
      const value = counter;
      await sleep(2, ctx.signal);
      counter = value + 1;
      return String(counter);
    })
    .tool('reset', { lock: 'counter' }, (_args, ctx) => {
      if (!ctx.confirm('Reset?')) return 'kept';
      counter = 0;
      return 'reset';
    });
  await app.start();
  for (const era of sdk.eras) {
    counter = 0;
    const client = await sdk.connect(() => app.createServer(sdk.line), era, {
      capabilities: { elicitation: { form: {} } },
      onElicit: async () => ({ action: 'accept', content: { confirm: true } }),
    });
    const values = await Promise.all(
      Array.from({ length: 10 }, () => client.call('inc').then((r) => r.content?.[0]?.text)),
    );
    const sorted = values.map(Number).sort((a, b) => a - b);
    if (sorted.join() !== '1,2,3,4,5,6,7,8,9,10') throw new Error(`${era}: increments ${values}`);
    const reset = await client.call('reset');
    if (reset.content?.[0]?.text !== 'reset' || counter !== 0)
      throw new Error(`${era}: reset ${JSON.stringify(reset)}`);
    await client.close();
  }
  await app.shutdown(100);
}
