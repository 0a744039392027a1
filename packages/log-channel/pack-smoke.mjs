// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line and era): logChannel()
// through tether(), one tool call whose log line arrives as notifications/message, related to the
// call. 2025 era: the logging capability is advertised and the default level (info) applies, the
// local sink sees every entry. 2026-07-28: the level rides each request's _meta; a request without
// one gets no logs.
import { handler, tether } from '@mcp-tether/core';
import { LOG_LEVEL_META_KEY, logChannel } from '@mcp-tether/log-channel';
import { z } from 'zod';

export default async function smoke(sdk) {
  const sunk = [];
  const logs = logChannel({ level: 'info', sink: (e) => sunk.push(e) });
  const makeServer = () => {
    const server = tether(sdk.createServer(), [logs]);
    server.registerTool(
      'greet',
      { inputSchema: sdk.schema({ name: z.string() }) },
      handler(async ({ name }, ctx) => {
        ctx.log.debug({ hidden: true });
        ctx.log.child('greeter').info({ greeted: name, era: ctx.era });
        return { content: [{ type: 'text', text: `hello ${name}` }] };
      }),
    );
    return server;
  };
  const line = (era) => ({ level: 'info', logger: 'greeter', data: { greeted: 'ada', era } });
  for (const era of sdk.eras) {
    const received = [];
    const client = await sdk.connect(makeServer, era, { onLog: (params) => received.push(params) });
    const texts = [];
    if (era === 'legacy') {
      if (JSON.stringify(client.serverCapabilities()?.logging) !== '{}')
        throw new Error('logging capability not advertised');
      const before = sunk.length;
      texts.push((await client.call('greet', { name: 'ada' })).content?.[0]?.text);
      if (sunk.length - before !== 2) throw new Error(`the sink got ${sunk.length - before} entries, expected 2`);
    } else {
      texts.push(
        (await client.call('greet', { name: 'ada' }, { meta: { [LOG_LEVEL_META_KEY]: 'info' } })).content?.[0]?.text,
      );
      texts.push((await client.call('greet', { name: 'ada' })).content?.[0]?.text); // no level: no logs
    }
    await client.close();
    if (texts.some((t) => t !== 'hello ada')) throw new Error(`${era}: unexpected results ${JSON.stringify(texts)}`);
    if (JSON.stringify(received) !== JSON.stringify([line(era)]))
      throw new Error(`${era}: unexpected log lines ${JSON.stringify(received)}`);
  }
}
