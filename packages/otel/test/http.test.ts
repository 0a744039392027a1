/**
 * One trace, client → HTTP → server → job, through the real Streamable HTTP front
 * (`@mcp-tether/http`, 127.0.0.1): a 2026-07-28 task (SDK 2.x client pinned, tasks extension) and a
 * 2025-era job handle (SDK 1.x client, a session). The client's trace id reaches the server span
 * and the job span; the server span's parent is the client span; the job span's is the call span.
 */
import { cancel } from '@mcp-tether/cancel';
import { tetherClient } from '@mcp-tether/client';
import { tether } from '@mcp-tether/core';
import { until } from '@mcp-tether/testing';
import { createMcpHttp, type McpHttp } from '@mcp-tether/http';
import { JobEngine, jobs, taskFront } from '@mcp-tether/jobs';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { SpanKind, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { instrumentClient, otel } from '../src/index.js';
import { histogram, type OtelKit, registerSdk, sum } from './kit.js';

const TASKS = 'io.modelcontextprotocol/tasks';
let kit: OtelKit;
let front: McpHttp;
let url: URL;

beforeAll(async () => {
  kit = registerSdk();
  const telemetry = otel();
  const engine = new JobEngine();
  const work = jobs({
    engine,
    tools: ['report'],
    inlineMs: 0,
    fronts: [taskFront({ engine, taskSupport: { report: 'optional' } })],
  });
  const register = (server: { registerTool: (...a: any[]) => unknown }, schema: unknown) =>
    server.registerTool('report', { inputSchema: schema }, async ({ ms }: { ms: number }) => {
      await new Promise((r) => setTimeout(r, ms));
      return { content: [{ type: 'text', text: 'report ready' }] };
    });
  front = createMcpHttp({
    legacy: () => {
      const server = tether(new McpServer({ name: 'otel-http', version: '1.0.0' }), [telemetry, cancel(), work]);
      work.registerTools(server as never);
      register(server as never, { ms: z.number() });
      return server;
    },
    modern: () => {
      const server = tether(new McpServerV2({ name: 'otel-http', version: '1.0.0' }), [telemetry, cancel(), work]);
      work.registerTools(server as never);
      register(server as never, z.object({ ms: z.number() }));
      return server;
    },
  });
  url = new URL((await front.listen(0, '127.0.0.1')).url);
}, 30_000);

afterAll(async () => {
  await front?.shutdown();
  await kit?.shutdown();
});

const tracer = () => trace.getTracer('otel-http-test');

function expectOneTrace(root: string) {
  const [client] = kit.named('tools/call report').filter((s) => s.kind === SpanKind.CLIENT);
  const [server] = kit.named('tools/call report').filter((s) => s.kind === SpanKind.SERVER);
  const [job] = kit.named('job report');
  expect(client?.spanContext().traceId).toBe(root);
  expect(server?.spanContext().traceId).toBe(root);
  expect(job?.spanContext().traceId).toBe(root);
  expect(server?.parentSpanContext?.spanId).toBe(client?.spanContext().spanId);
  expect(job?.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
  expect(server?.attributes['network.transport']).toBe('tcp');
  expect(server?.attributes['network.protocol.name']).toBe('http');
  return { client, server, job };
}

/** Call `report` as a task under a root span; the spans of the one trace once the job span ended. */
async function reportAsTask(client: unknown) {
  const tc = instrumentClient(tetherClient(client as never, { timeoutMs: 10_000 }));
  let root = '';
  const result = await tracer().startActiveSpan('user asks for a report', async (span) => {
    root = span.spanContext().traceId;
    try {
      return await tc.callTask('report', { ms: 100 });
    } finally {
      span.end();
    }
  });
  expect((result.content as Array<{ text?: string }> | undefined)?.[0]?.text).toBe('report ready');
  await until(() => kit.named('job report').length === 1, 10_000, 'the job span ended');
  return { root, ...expectOneTrace(root) };
}

it('2026-07-28 task: client span → server span → job span, one trace; the job ends completed', async () => {
  kit.reset();
  const client = new ClientV2({ name: 'otel-v2', version: '0' }, {
    capabilities: { extensions: { [TASKS]: {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  await client.connect(new HttpV2(url));
  const { root, server, job } = await reportAsTask(client);
  expect(server?.attributes['mcp.protocol.version']).toBe('2026-07-28');
  expect(server?.attributes['mcp.session.id']).toBeUndefined();
  expect(job?.attributes['tether.job.mode']).toMatch(/^task/);
  expect(job?.attributes['tether.job.status']).toBe('completed');
  // the polls (tasks/get) are client spans of the same trace
  expect(kit.named('tasks/get').filter((s) => s.spanContext().traceId === root).length).toBeGreaterThanOrEqual(1);
  await client.close();
});

it('2025-11-25 task (SDK 1.x session, params.task): client span → server span → job span, one trace', async () => {
  kit.reset();
  const client = new Client({ name: 'otel-v1-task', version: '0' }, { capabilities: { tasks: {} } } as never);
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  const { root, server, job } = await reportAsTask(client);
  expect(server?.attributes['mcp.protocol.version']).toBe('2025-11-25');
  expect(job?.attributes['tether.job.mode']).toMatch(/^task/);
  expect(job?.attributes['tether.job.status']).toBe('completed');
  await transport.terminateSession();
  await client.close();
});

it('2025-era session: a job handle followed with jobs.status, one trace; session metrics', async () => {
  kit.reset();
  const client = instrumentClient(new Client({ name: 'otel-v1', version: '0' }));
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  let root = '';
  await tracer().startActiveSpan('user asks for a report', async (span) => {
    root = span.spanContext().traceId;
    try {
      const first = await client.callTool({ name: 'report', arguments: { ms: 100 } });
      const jobId = (first.structuredContent as { jobId: string }).jobId;
      let r: any = first;
      for (let i = 0; i < 20 && r.structuredContent?.status !== 'completed'; i++)
        r = await client.callTool({ name: 'jobs.status', arguments: { jobId, waitMs: 2_000 } });
      expect(r.structuredContent?.status).toBe('completed');
    } finally {
      span.end();
    }
  });
  await until(() => kit.named('job report').length === 1, 10_000, 'the job span ended');
  const { server } = expectOneTrace(root);
  expect(server?.attributes['mcp.protocol.version']).toBe('2025-11-25');
  expect(typeof server?.attributes['mcp.session.id']).toBe('string');
  const polls = kit.named('tools/call jobs.status').filter((s) => s.kind === SpanKind.SERVER);
  expect(polls.every((s) => s.spanContext().traceId === root)).toBe(true);
  await transport.terminateSession(); // DELETE: the front closes the session
  await client.close();
  let m = await kit.collect();
  for (let i = 0; i < 500 && histogram(m.get('mcp.server.session.duration')).length === 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
    m = await kit.collect();
  }
  const events = sum(m.get('tether.http.sessions'));
  expect(events.find((p) => p.attributes['tether.http.session.event'] === 'opened')?.value).toBeGreaterThanOrEqual(1);
  expect(events.find((p) => p.attributes['tether.http.session.event'] === 'closed')?.value).toBeGreaterThanOrEqual(1);
  expect(histogram(m.get('mcp.server.session.duration'))[0]?.value.count).toBeGreaterThanOrEqual(1);
});
