/**
 * A person answering takes as long as the person, even against a server that sends no heartbeat:
 * while the client's own elicitation handler runs, the watchdog and timeout of calls in flight are
 * paused, and they restart from the answer (every SDK line and era; on 2026-07-28 the question
 * comes as input_required and the SDK 2.x client fulfils it through the same handler).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { handler } from '@mcp-tether/core';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer, type MatrixClient } from '@mcp-tether/testing/matrix';
import { ask, mrtr, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { afterEach, expect, it } from 'vitest';
import { isCallAborted, tetherClient } from '../src/index.js';

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describeEachSdk('pauseWhileAsking', (sdk) => {
  const fields = { ok: ask.boolean('Go on?') };
  const factory = () => {
    const { server } = tetheredServer(sdk, [mrtr()]);
    server.registerTool(
      'confirm',
      { inputSchema: {} },
      handler(async () => {
        const answer = readInputResult(fields);
        if (!answer) return requireInput.elicit('Go on?', fields);
        return {
          content: [
            { type: 'text' as const, text: answer.action === 'accept' && answer.content.ok ? 'went on' : 'stopped' },
          ],
        };
      }),
    );
    return server;
  };
  const slowAnswer = async () => {
    await delay(600);
    return { action: 'accept' as const, content: { ok: true } };
  };

  it('a 600 ms answer outlives a 150 ms watchdog and timeout (no heartbeat on this server)', async () => {
    kit = await sdk.connect(factory, { elicit: slowAnswer });
    const tc = tetherClient(kit.client);
    const t0 = Date.now();
    const r = await tc.callTool('confirm', {}, { silenceMs: 150, timeoutMs: 150 });
    expect(firstText(r)).toBe('went on');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(600);
    expect(kit.wire.fromClient().filter((m) => m.message.method === 'notifications/cancelled')).toHaveLength(0);
  });

  it('control, pauseWhileAsking: false: the watchdog gives up while the person is still answering', async () => {
    kit = await sdk.connect(factory, { elicit: slowAnswer });
    const tc = tetherClient(kit.client, { pauseWhileAsking: false });
    const err = await tc.callTool('confirm', {}, { silenceMs: 150 }).catch((e) => e);
    expect(isCallAborted(err)).toBe(true);
    expect(err.kind).toBe('silence');
  });

  it('the total cap is not paused', async () => {
    kit = await sdk.connect(factory, { elicit: slowAnswer });
    const tc = tetherClient(kit.client);
    const err = await tc.callTool('confirm', {}, { maxTotalMs: 300 }).catch((e) => e);
    expect(err.kind).toBe('total');
  });
});
