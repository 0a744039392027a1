/**
 * Wire tests of the assembled demo server: the real per-session factory (every middleware
 * attached through tether()), a real SDK client, in memory.
 */
import { connect, type TestClient } from '@mcp-tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoApp } from '../src/index.js';
import { sleep, textOf } from './helpers.js';

/** The tools `tools/list` shows without --conformance (README "Tools": the 8 demo tools, corpus.reindex and the two job tools). */
const DEMO_TOOLS = [
  'report.generate',
  'progress.flood',
  'job.quiet',
  'billing.refund',
  'account.connect',
  'records.increment',
  'records.get',
  'logs.emit',
  'corpus.reindex',
  'jobs.status',
  'jobs.cancel',
];

let kit: TestClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('the assembled demo server', () => {
  it('lists the demo tools with an input schema and the contract annotations, and no conformance fixture', async () => {
    kit = await connect(createDemoApp().createServer());
    const { tools } = await kit.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(tools.map((t) => t.name).sort()).toEqual([...DEMO_TOOLS].sort());
    for (const name of DEMO_TOOLS) expect(byName.get(name)?.inputSchema.type, name).toBe('object');
    expect(tools.filter((t) => t.name.startsWith('test_')).map((t) => t.name)).toEqual([]);
    expect((await kit.client.listPrompts().catch(() => ({ prompts: [] }))).prompts).toEqual([]);
    expect(byName.get('records.increment')?.annotations?.destructiveHint).toBe(true);
    expect(byName.get('records.get')?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('report.generate')?.inputSchema.properties).toHaveProperty('rows');
  });

  it('lists the conformance fixtures too when asked to (tether-demo --conformance)', async () => {
    kit = await connect(createDemoApp({ conformanceFixtures: true }).createServer());
    const names = (await kit.client.listTools()).tools.map((t) => t.name);
    for (const name of [
      ...DEMO_TOOLS,
      'test_simple_text',
      'test_error_handling',
      'test_reconnection',
      'test_elicitation',
      'test_elicitation_sep1034_defaults',
      'test_elicitation_sep1330_enums',
      'test_tool_with_logging',
      'test_tool_with_progress',
      'test_input_required_result_elicitation',
    ]) {
      expect(names, name).toContain(name);
    }
    expect((await kit.client.listPrompts()).prompts.map((p) => p.name)).toEqual(['test_input_required_result_prompt']);
    // the tasks-extension fixtures (SEP-2663), served by the demo's task front
    const tools = (await kit.client.listTools()).tools as Array<{ name: string; execution?: { taskSupport?: string } }>;
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    expect(support).toMatchObject({
      greet: 'forbidden',
      slow_compute: 'optional',
      failing_job: 'required',
      protocol_error_job: 'optional',
      confirm_delete: 'optional',
      multi_input: 'optional',
      test_tool_with_task: 'required',
      'corpus.reindex': 'optional',
    });
    expect(tools).toHaveLength(34); // README: 11 demo tools, 34 with --conformance
  });

  it('gives bad arguments the SDK invalid-params result and keeps serving', async () => {
    kit = await connect(createDemoApp({ conformanceFixtures: true }).createServer());
    const bad: Array<[string, Record<string, unknown>]> = [
      ['report.generate', { rows: 0 }],
      ['report.generate', { rows: 2.5 }],
      ['progress.flood', { iterations: -1 }],
      ['job.quiet', {}],
      ['records.increment', { key: 5 }],
      ['records.increment', { key: '' }],
      ['records.get', { key: ['x'] }],
    ];
    for (const [name, args] of bad) {
      const r = await kit.callTool(name, args);
      expect(r.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(textOf(r)).toMatch(/-32602.*Input validation error/);
    }
    expect(textOf(await kit.callTool('test_simple_text', {}))).toBe('This is a simple text response for testing.');
    await kit.ping();
  });

  it('cancelling job.quiet yields no response for it', async () => {
    kit = await connect(createDemoApp().createServer());
    const call = kit.start('job.quiet', { ms: 60_000 }, { id: 'quiet-1' });
    await sleep(100);
    await call.cancel('user pressed stop');
    await kit.ping(); // the server is alive and has processed the cancel
    await expect(call.response(500)).rejects.toThrow();
    expect(kit.wire.responseTo('quiet-1')).toBeUndefined();
    // and the next call on the same connection works
    expect(textOf(await kit.callTool('job.quiet', { ms: 10 }))).toBe('done');
  });

  it('runs job.quiet to completion when nobody cancels', async () => {
    kit = await connect(createDemoApp().createServer());
    expect(textOf(await kit.callTool('job.quiet', { ms: 30 }))).toBe('done');
  });

  it('serves the plain conformance fixtures', async () => {
    kit = await connect(createDemoApp({ conformanceFixtures: true }).createServer());
    const simple = await kit.callTool('test_simple_text', {});
    expect(simple.isError).toBeFalsy();
    expect(textOf(simple)).toBe('This is a simple text response for testing.');
    const error = await kit.callTool('test_error_handling', {});
    expect(error.isError).toBe(true);
    expect(textOf(error)).toContain('intentionally returns an error');
    // Outside Streamable HTTP there is no SSE stream to close: the fixture still completes.
    expect(textOf(await kit.callTool('test_reconnection', {}))).toContain('Reconnection test completed');
  });

  it('shares records between the sessions of one app, not between apps', async () => {
    const app = createDemoApp();
    kit = await connect(app.createServer());
    const other = await connect(app.createServer());
    try {
      await kit.callTool('records.increment', { key: 'shared', delayMs: 0 });
      expect(textOf(await other.callTool('records.get', { key: 'shared' }))).toBe('1');
      const fresh = await connect(createDemoApp().createServer());
      expect(textOf(await fresh.callTool('records.get', { key: 'shared' }))).toBe('0');
      await fresh.close();
    } finally {
      await other.close();
    }
  });
});
