/**
 * The demo's telemetry, end to end: `tether-demo --metrics-port 0` (a child process, the standard
 * OpenTelemetry Node SDK with the Prometheus exporter), driven by real SDK clients over HTTP, then
 * scraped over HTTP. The standard MCP duration histogram per tool sits beside tether's own metrics,
 * and every metric name the shipped Grafana dashboard queries is one this run emitted.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
let child: ChildProcess;
let url: URL;
let metricsUrl: string;

beforeAll(async () => {
  child = spawn(
    process.execPath,
    [
      '--import',
      import.meta.resolve('tsx'),
      bin,
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--quiet',
      '--inline-ms',
      '300',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '' } },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo did not start: ${err}`)), 30_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const server = /listening on (\S+)/.exec(out);
      const metrics = /metrics on (\S+)/.exec(out);
      if (server && metrics) {
        clearTimeout(timer);
        url = new URL(server[1]!);
        metricsUrl = metrics[1]!;
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`the demo exited (${code}): ${err}`)));
  });
}, 40_000);

afterAll(async () => {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
});

/** The metric names a dashboard's PromQL queries (label names in `by (...)` and `{...}` left out). */
function queriedNames(dashboard: { panels?: Array<{ targets?: Array<{ expr?: string }> }> }): Set<string> {
  const names = new Set<string>();
  for (const panel of dashboard.panels ?? [])
    for (const target of panel.targets ?? []) {
      const expr = (target.expr ?? '').replace(/\b(by|without)\s*\([^)]*\)/g, ' ').replace(/\{[^}]*\}/g, ' ');
      for (const m of expr.matchAll(/\b(?:mcp|tether)_[a-z0-9_]+/g)) names.add(m[0]);
    }
  return names;
}

it('a scrape shows mcp_server_operation_duration per tool beside tether_* metrics, and every name the dashboard queries', async () => {
  const client = new Client({ name: 'telemetry-test', version: '0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: true } }));
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  // progress notifications, a lock wait, an MRTR round, a job (handle + jobs.status), a cancellation
  await client.callTool({ name: 'report.generate', arguments: { rows: 3, delayMs: 10 } }, undefined, {
    onprogress: () => {},
  });
  await Promise.all([
    client.callTool({ name: 'records.increment', arguments: { key: 'k', delayMs: 100 } }),
    client.callTool({ name: 'records.increment', arguments: { key: 'k', delayMs: 100 } }),
  ]);
  await client.callTool({ name: 'billing.refund', arguments: { invoiceId: 'INV-1001' } });
  const first = await client.callTool({ name: 'corpus.reindex', arguments: { files: 20, delayMs: 30 } });
  const jobId = (first.structuredContent as { jobId?: string } | undefined)?.jobId;
  expect(typeof jobId).toBe('string');
  let r: any = first;
  for (let i = 0; i < 30 && r.structuredContent?.status !== 'completed'; i++)
    r = await client.callTool({ name: 'jobs.status', arguments: { jobId, waitMs: 2_000 } });
  expect(r.structuredContent?.status).toBe('completed');
  const stop = new AbortController();
  const quiet = client.callTool({ name: 'job.quiet', arguments: { ms: 60_000 } }, undefined, { signal: stop.signal });
  await new Promise((resolve) => setTimeout(resolve, 300));
  stop.abort('enough');
  await quiet.catch(() => undefined);
  await transport.terminateSession();
  await client.close();

  // the session's end is recorded when the server side closes: scrape until it shows
  let text = '';
  for (let i = 0; i < 200; i++) {
    text = await (await fetch(metricsUrl)).text();
    if (/^tether_cancellations_total\{/m.test(text) && /^mcp_server_session_duration_count\{/m.test(text)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const emitted = new Set(
    text
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split(/[{ ]/)[0]),
  );
  expect(text).toMatch(/^mcp_server_operation_duration_bucket\{[^}]*gen_ai_tool_name="records.increment"/m);
  expect(text).toMatch(/^mcp_server_operation_duration_bucket\{[^}]*gen_ai_tool_name="corpus.reindex"/m);
  const dashboard = JSON.parse(
    readFileSync(fileURLToPath(import.meta.resolve('@mcp-tether/otel/grafana/tether.json')), 'utf8'),
  );
  const queried = queriedNames(dashboard);
  expect(queried.size).toBeGreaterThanOrEqual(12);
  expect([...queried].filter((n) => !emitted.has(n))).toEqual([]);
}, 60_000);
