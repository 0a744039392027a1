import { McpServer } from '@modelcontextprotocol/server';
import { it, expect } from 'vitest';
import { z } from 'zod';
import { tether, progressEvent, handler, type Middleware } from '../src/index.js';
import { connectV2 } from '../src/testing/v2.js';

const toWire: Middleware = { name: 'p', onEvent(_c, e, next) { if (e.type === 'progress') return next({ type: 'notification', notification: { method: 'notifications/progress', params: { progress: e.progress, total: e.total } } }); return next(e); } };

function make() {
  const s = tether(new McpServer({ name: 't', version: '1' }), [toWire]);
  s.registerTool('gen', { inputSchema: { n: z.number() } }, handler(async function* (args, ctx) {
    yield progressEvent(10, 100);
    yield progressEvent(20, 100);
    return { content: [{ type: 'text' as const, text: `n=${args.n} era=${ctx.era} v=${ctx.protocolVersion} meta=${JSON.stringify(ctx.meta)} caps=${JSON.stringify(ctx.clientCapabilities)} ch=${ctx.channel}` }] };
  }));
  s.registerTool('ask', { inputSchema: { x: z.string() } }, handler(async (args, ctx) => {
    if (!ctx.inputResponses) return { resultType: 'input_required' as const, inputRequests: { confirm: { method: 'elicitation/create' as const, params: { mode: 'form', message: 'ok?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } } } }, requestState: 'st-1' };
    return { content: [{ type: 'text' as const, text: `got ${JSON.stringify(ctx.inputResponses)} state=${ctx.requestState}` }] };
  }));
  return s;
}

for (const era of ['legacy', 'modern'] as const) {
  it(`smoke ${era}`, async () => {
    const kit = await connectV2(() => make(), { era, elicit: [{ action: 'accept', content: { ok: true } }] });
    const r = await kit.callTool('gen', { n: 3 }, { progressToken: 'tok', meta: { 'io.modelcontextprotocol/logLevel': 'info' } });
    console.log(era, JSON.stringify(r));
    console.log(kit.wire.transcript());
    const r2 = await kit.callTool('ask', { x: 'a' }).catch((e) => String(e));
    console.log(era, JSON.stringify(r2));
    await kit.close();
  });
}
