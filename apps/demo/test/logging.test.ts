/** Logging through @mcp-tether/log-channel, seen by a real SDK client. */
import { connect, type TestClient } from '@mcp-tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoApp } from '../src/index.js';
import { sleep, textOf } from './helpers.js';

let kit: TestClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

/** The notifications/message params the client received, in order. */
const messages = (k: TestClient) =>
  k.wire
    .notifications('notifications/message')
    .map((m) => m.message.params as { level: string; logger?: string; data: unknown });

describe('logs.emit', () => {
  it('after setLevel warning delivers 5 messages (warning and above)', async () => {
    kit = await connect(createDemoApp().createServer());
    await kit.client.setLoggingLevel('warning');
    expect(textOf(await kit.callTool('logs.emit', {}))).toBe('8');
    await sleep(50);
    const got = messages(kit);
    expect(got.map((m) => m.level)).toEqual(['warning', 'error', 'critical', 'alert', 'emergency']);
    expect(got.every((m) => m.logger === 'demo')).toBe(true);
  });

  it('after setLevel debug delivers all 8, in level order', async () => {
    kit = await connect(createDemoApp().createServer());
    await kit.client.setLoggingLevel('debug');
    await kit.callTool('logs.emit', {});
    await sleep(50);
    expect(messages(kit).map((m) => m.level)).toEqual([
      'debug',
      'info',
      'notice',
      'warning',
      'error',
      'critical',
      'alert',
      'emergency',
    ]);
  });

  it('before any setLevel uses the default level (info): 7 messages', async () => {
    kit = await connect(createDemoApp().createServer());
    await kit.callTool('logs.emit', {});
    await sleep(50);
    expect(messages(kit)).toHaveLength(7);
  });

  it('levels are per session', async () => {
    const app = createDemoApp();
    kit = await connect(app.createServer(), { sessionId: 'a' });
    const other = await connect(app.createServer(), { sessionId: 'b' });
    try {
      await kit.client.setLoggingLevel('emergency');
      await kit.callTool('logs.emit', {});
      await other.callTool('logs.emit', {});
      await sleep(50);
      expect(messages(kit)).toHaveLength(1);
      expect(messages(other)).toHaveLength(7);
    } finally {
      await other.close();
    }
  });

  it('rejects an unknown level with -32602 and keeps the previous one', async () => {
    kit = await connect(createDemoApp().createServer());
    await kit.client.setLoggingLevel('error');
    await expect(
      kit.client.request(
        { method: 'logging/setLevel', params: { level: 'verbose' } } as never,
        (await import('@modelcontextprotocol/sdk/types.js')).EmptyResultSchema,
      ),
    ).rejects.toMatchObject({ code: -32602 });
    await kit.callTool('logs.emit', {});
    await sleep(50);
    expect(messages(kit)).toHaveLength(4);
  });
});

it('test_tool_with_logging sends 3 messages during the call, before its response', async () => {
  kit = await connect(createDemoApp({ conformanceFixtures: true }).createServer());
  expect(kit.client.getServerCapabilities()?.logging).toBeDefined();
  await kit.client.setLoggingLevel('debug');
  const r = await kit.callTool('test_tool_with_logging', {});
  expect(textOf(r)).toContain('executed successfully');
  const logs = kit.wire.notifications('notifications/message');
  expect(logs.map((m) => m.message.params.data)).toEqual([
    'Tool execution started',
    'Tool processing data',
    'Tool execution completed',
  ]);
  const response = kit.wire
    .fromServer()
    .find((m) => m.message.result && textOf(m.message.result).includes('executed successfully'))!;
  expect(logs.every((m) => m.seq < response.seq)).toBe(true);
});
