/**
 * The Prometheus endpoint, scraped over HTTP: `@opentelemetry/exporter-prometheus` (0.223 line) as the
 * reader of the meter provider `otel()` is given; the standard MCP histogram per tool beside tether's
 * own counters (the demo's test checks every name the dashboard queries against a scrape of the demo).
 */
import { tether } from '@mcp-tether/core';
import { connect } from '@mcp-tether/testing';
import { mutex } from '@mcp-tether/mutex';
import { progressMiddleware } from '@mcp-tether/progress';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { DURATION_BUCKETS_S, otel } from '../src/index.js';

let exporter: PrometheusExporter;
let provider: MeterProvider;
let url: string;

beforeAll(async () => {
  exporter = new PrometheusExporter({ host: '127.0.0.1', port: 0, preventServerStart: true });
  await exporter.startServer();
  const { port } = (exporter as unknown as { _server: { address(): { port: number } } })._server.address();
  url = `http://127.0.0.1:${port}/metrics`;
  provider = new MeterProvider({ readers: [exporter] });
});
afterAll(async () => {
  await provider.shutdown();
});

it('serves mcp_server_operation_duration per tool with the conventions buckets, beside tether_* counters', async () => {
  const mw = otel({ meterProvider: provider });
  const server = tether(new McpServer({ name: 'prom', version: '1.0.0' }), [mw, progressMiddleware(), mutex()]);
  server.registerTool(
    'report.generate',
    { inputSchema: { n: z.number() }, annotations: { destructiveHint: true } },
    async ({ n }) => ({ content: [{ type: 'text', text: String(n) }] }),
  );
  const kit = await connect(server);
  for (let i = 0; i < 3; i++) await kit.callTool('report.generate', { n: i });
  await kit.close();
  mw.dispose();

  const res = await fetch(url);
  expect(res.status).toBe(200);
  const text = await res.text();
  const buckets = text
    .split('\n')
    .filter(
      (l) => l.startsWith('mcp_server_operation_duration_bucket{') && l.includes('gen_ai_tool_name="report.generate"'),
    );
  // one line per boundary, plus +Inf
  expect(buckets).toHaveLength(DURATION_BUCKETS_S.length + 1);
  expect(buckets.at(-1)).toMatch(/le="\+Inf"} 3$/);
  expect(
    buckets.every(
      (l) => l.includes('mcp_method_name="tools/call"') && l.includes('gen_ai_operation_name="execute_tool"'),
    ),
  ).toBe(true);
  expect(text).toMatch(/^tether_lock_wait_duration_count\{[^}]*\} 3$/m);
  expect(text).toMatch(/^tether_calls_in_flight\{[^}]*gen_ai_tool_name="report.generate"[^}]*\} 0$/m);
});
