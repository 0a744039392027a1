/**
 * `app.stdio()` in a real process, driven by an SDK 1.x client over stdio, with SDK 1.x (its
 * `StdioServerTransport`) and SDK 2.x (its `serveStdio`) serving: the tools, a question, the end
 * of input shuts the server down.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { textOf } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/stdio.ts', import.meta.url));

describe.each(['v1', 'v2'])('app.stdio() on SDK %s', (sdk) => {
  it('serves the tools and a question; the process ends when the client closes', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', fixture],
      env: { ...(process.env as Record<string, string>), LEGACY_SDK: sdk, SECOND_MS: '50' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-test', version: '0' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: true } }));
    await client.connect(transport);
    const pid = transport.pid!;
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['reindex', 'counter.increment', 'counter.reset']));
    expect(textOf(await client.callTool({ name: 'counter.increment', arguments: {} }))).toBe('1');
    expect(textOf(await client.callTool({ name: 'counter.reset', arguments: {} }))).toBe('Counter reset to 0.');
    expect(textOf(await client.callTool({ name: 'reindex', arguments: { seconds: 2 } }))).toBe(
      'Reindexed for 2 seconds.',
    );
    await client.close(); // ends stdin: the server shuts down
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 1_000 && alive(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(alive()).toBe(false);
  }, 150_000);
});
