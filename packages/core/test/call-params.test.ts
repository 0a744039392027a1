// Fault 8 (issue 16): malformed tools/call / prompts/get / resources/read params are answered -32602
// with a short message on every SDK line and era, before any middleware runs.
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { describeEachSdk, tetheredServer, type MatrixClient } from '@mcp-tether/testing/matrix';
import type { Middleware } from '../src/index.js';

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close().catch(() => {});
  kit = undefined;
});

const MALFORMED: ReadonlyArray<readonly [string, string, unknown, RegExp]> = [
  ['args-string', 'tools/call', { name: 'echo', arguments: 'nope' }, /arguments must be an object/],
  ['args-array', 'tools/call', { name: 'echo', arguments: [1] }, /arguments must be an object/],
  ['args-null', 'tools/call', { name: 'echo', arguments: null }, /arguments must be an object/],
  ['name-number', 'tools/call', { name: 42, arguments: {} }, /name must be a string/],
  ['name-missing', 'tools/call', { arguments: {} }, /name must be a string/],
  ['prompt-arg-number', 'prompts/get', { name: 'greet', arguments: { who: 1 } }, /prompt arguments must be strings/],
  ['uri-number', 'resources/read', { uri: 5 }, /uri must be a string/],
];

describeEachSdk('malformed call params (fault 8)', (sdk) => {
  it('are answered -32602 with a short message, with the request id; no middleware sees them; the next call is served', async () => {
    const seen: string[] = [];
    const errors: unknown[] = [];
    const spy: Middleware = { name: 'spy', handle: (ctx, next) => (seen.push(ctx.name), next()) };
    kit = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [spy], errors);
      server.registerTool('echo', { inputSchema: { s: z.string() } }, async ({ s }: { s: string }) => ({
        content: [{ type: 'text', text: s }],
      }));
      (server as any).registerPrompt('greet', { argsSchema: { who: z.string() } }, ({ who }: { who: string }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `hi ${who}` } }],
      }));
      (server as any).registerResource('r', 'mem://r', {}, async () => ({ contents: [{ uri: 'mem://r', text: 'r' }] }));
      return server;
    });
    for (const [id, method, params, message] of MALFORMED) {
      await kit.sendRaw({ jsonrpc: '2.0', id, method, params });
      const r = (await kit.wire.waitFor((m) => m.direction === 'server->client' && m.message.id === id, 5_000))
        .message as any;
      expect(r.error, id).toMatchObject({ code: -32602, message: expect.stringMatching(message) });
      expect(r.error.message.length, id).toBeLessThan(120);
    }
    expect(seen).toEqual([]);
    expect((await kit.callTool('echo', { s: 'fine' })).content).toEqual([{ type: 'text', text: 'fine' }]);
  });
});
