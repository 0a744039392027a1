/**
 * One trace across processes: a 2026-07-28 task called through the HTTP front (this process) runs
 * on a BullMQ worker in another process (`fixtures/worker.ts`, its own OpenTelemetry SDK). The only
 * thing the two processes share is Redis: the call span's trace context travels in the job record,
 * and the worker's `job report` span continues the client's trace, child of and linked to the
 * front's server span. Real redis-server, real BullMQ, real child process.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { tetherClient } from '@mcp-tether/client';
import { createMcpHttp, type McpHttp } from '@mcp-tether/http';
import { startRedis, type TestRedis } from '@mcp-tether/redis/testing';
import { until } from '@mcp-tether/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SpanKind, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { instrumentClient } from '../src/index.js';
import { makeStack } from './fixtures/stack.js';
import { type OtelKit, registerSdk } from './kit.js';

interface WorkerSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  links: Array<{ spanId: string; traceId: string; attributes?: Record<string, unknown> }>;
  attributes: Record<string, unknown>;
}

let redis: TestRedis;
let kit: OtelKit;
let stack: Awaited<ReturnType<typeof makeStack>>;
let front: McpHttp;
let url: URL;
let worker: ReturnType<typeof spawn>;
let output = '';
let exited: Promise<unknown>;

beforeAll(async () => {
  redis = await startRedis();
  kit = registerSdk();
  const prefix = `otel${randomBytes(4).toString('hex')}:`;
  stack = await makeStack(redis.url, prefix);
  front = createMcpHttp({ modern: () => stack.server() as never });
  url = new URL((await front.listen(0, '127.0.0.1')).url);
  const fixture = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url));
  worker = spawn(process.execPath, ['--import', 'tsx', fixture, redis.url, prefix], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  worker.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  worker.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  exited = new Promise((resolve) => worker.once('exit', resolve));
  await until(() => output.includes('listening') || worker.exitCode !== null, 120_000, 'the worker process started');
  expect(output).toContain('listening');
}, 180_000);

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    worker.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (worker.exitCode === null) worker.kill('SIGKILL');
  }
  await front?.shutdown();
  await stack?.close();
  await kit?.shutdown();
  await redis?.stop();
});

const workerSpans = (): WorkerSpan[] =>
  output
    .split('\n')
    .filter((l) => l.startsWith('span '))
    .map((l) => JSON.parse(l.slice(5)) as WorkerSpan);

it('2026-07-28 task on a BullMQ worker in another process: client → front → worker job span, one trace', async () => {
  const client = new Client({ name: 'otel-cross', version: '0' }, {
    capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  await client.connect(new StreamableHTTPClientTransport(url));
  const tc = instrumentClient(tetherClient(client as never, { timeoutMs: 60_000 }));
  let root = '';
  const result = await trace.getTracer('otel-cross-test').startActiveSpan('user asks for a report', async (span) => {
    root = span.spanContext().traceId;
    try {
      return await tc.callTask('report', { ms: 200 });
    } finally {
      span.end();
    }
  });
  await client.close();
  // The handler ran in the worker process, not here.
  expect((result.content as Array<{ text?: string }> | undefined)?.[0]?.text).toBe(
    `report ready in process ${worker.pid}`,
  );
  const [server] = kit.named('tools/call report').filter((s) => s.kind === SpanKind.SERVER);
  expect(server?.spanContext().traceId).toBe(root);
  expect(kit.named('job report')).toHaveLength(0); // the front ran no job
  await until(
    () => workerSpans().some((s) => s.name === 'job report' && s.attributes['tether.job.status'] !== undefined),
    30_000,
    "the worker's job span ended",
  );
  const job = workerSpans().find((s) => s.name === 'job report')!;
  expect(job.traceId).toBe(root);
  expect(job.parentSpanId).toBe(server!.spanContext().spanId);
  expect(job.links.map((l) => l.spanId)).toContain(server!.spanContext().spanId);
  expect(job.attributes['tether.job.status']).toBe('completed');
  expect(job.attributes['tether.job.mode']).toMatch(/^task/);
}, 120_000);
