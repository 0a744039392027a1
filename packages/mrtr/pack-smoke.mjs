// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): mrtr() through
// tether(), a refund tool that asks a yes/no question, a client that answers it. 2025 era: mrtr
// pushes elicitation/create and re-enters the handler in process; 2026-07-28 (a fresh server per
// request): input_required with a sealed requestState, the client answers and retries. Either way:
// one question, two rounds of the handler, the refund done.
import { handler, tether } from '@mcp-tether/core';
import { ask, mrtr, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { z } from 'zod';

export default async function smoke(sdk) {
  const approval = { confirm: ask.boolean('Approve the refund') };
  let runs = 0;
  const makeServer = () => {
    const server = tether(sdk.createServer(), [mrtr()]);
    server.registerTool(
      'refund',
      { inputSchema: sdk.schema({ id: z.string() }) },
      handler(async ({ id }, ctx) => {
        runs++;
        const answer = readInputResult(approval);
        if (!answer) return requireInput.elicit(`Refund ${id}?`, approval);
        const done = answer.action === 'accept' && answer.content.confirm;
        return { content: [{ type: 'text', text: done ? `refunded ${id} (${ctx.era})` : 'not refunded' }] };
      }),
    );
    return server;
  };
  for (const era of sdk.eras) {
    const asked = [];
    const client = await sdk.connect(makeServer, era, {
      capabilities: { elicitation: { form: {} } },
      onElicit: async (params) => {
        asked.push(params);
        return { action: 'accept', content: { confirm: true } };
      },
    });
    const before = runs;
    const r = await client.call('refund', { id: `inv-${era}` });
    await client.close();
    const got = { text: r.content?.[0]?.text, asked: asked.length, runs: runs - before };
    const want = { text: `refunded inv-${era} (${era})`, asked: 1, runs: 2 };
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${era}: unexpected ${JSON.stringify(got)}`);
    if (asked[0].requestedSchema?.properties?.confirm?.type !== 'boolean')
      throw new Error(`${era}: unexpected elicitation ${JSON.stringify(asked)}`);
  }
}
