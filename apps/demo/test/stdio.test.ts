/** The bin over stdio, as an MCP host would spawn it. */
import { fileURLToPath } from 'node:url';
import { connectStdio } from '@mcp-tether/testing';
import { expect, it } from 'vitest';
import { textOf } from './helpers.js';

it('serves the demo over stdio', async () => {
  const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
  const kit = await connectStdio(process.execPath, ['--import', import.meta.resolve('tsx'), bin, '--stdio', '--quiet']);
  try {
    const { tools } = await kit.client.listTools();
    expect(tools.map((t) => t.name)).toContain('report.generate');
    expect(textOf(await kit.callTool('records.increment', { key: 'k', delayMs: 0 }))).toBe('1');
  } finally {
    await kit.close();
  }
});
