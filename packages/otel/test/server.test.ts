import { ProtocolError } from '@mcp-tether/core';
import { describeEachSdk, tetheredServer, type SdkTarget } from '@mcp-tether/testing/matrix';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { DURATION_BUCKETS_S, instrumentClient, otel } from '../src/index.js';
import { histogram, type OtelKit, registerSdk, sum } from './kit.js';

let kit: OtelKit;
beforeAll(() => {
  kit = registerSdk();
});
afterAll(() => kit.shutdown());
beforeEach(() => kit.reset());

const mw = otel({ captureArguments: true, captureResults: true });

function serverOf(sdk: SdkTarget, errors: unknown[]) {
  return () => {
    const { server } = tetheredServer(sdk, [mw], errors);
    server.registerTool('echo', { inputSchema: { s: z.string() } }, async ({ s }: { s: string }) => ({
      content: [{ type: 'text', text: s }],
    }));
    server.registerTool('refuse', { inputSchema: {} }, async () => ({
      content: [{ type: 'text', text: 'no' }],
      isError: true,
    }));
    server.registerTool('throws', { inputSchema: {} }, async () => {
      throw new Error('boom');
    });
    server.registerPrompt('faulty', {}, async () => {
      throw new ProtocolError(-32001, 'server fault');
    });
    server.registerPrompt('greet', { argsSchema: { who: z.string() } }, async ({ who }: { who: string }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `hi ${who}` } }],
    }));
    server.registerResource('doc', 'mem://doc/1', {}, async (uri: URL) => ({
      contents: [{ uri: uri.href, text: 'doc' }],
    }));
    return server;
  };
}

describeEachSdk('otel server spans', (sdk) => {
  it('tools/call: a SERVER span named by the conventions, child of the client span, and the duration metric', async () => {
    const errors: unknown[] = [];
    const client = await sdk.connect(serverOf(sdk, errors), sdk.era === 'legacy' ? { sessionId: 'sess-1' } : {});
    instrumentClient(client.client);
    const result = await client.client.callTool({ name: 'echo', arguments: { s: 'hi' } });
    expect(result.content[0].text).toBe('hi');
    const [server] = kit.named('tools/call echo').filter((s) => s.kind === SpanKind.SERVER);
    const [clientSpan] = kit.named('tools/call echo').filter((s) => s.kind === SpanKind.CLIENT);
    expect(server).toBeDefined();
    expect(clientSpan).toBeDefined();
    expect(server!.spanContext().traceId).toBe(clientSpan!.spanContext().traceId);
    expect(server!.parentSpanContext?.spanId).toBe(clientSpan!.spanContext().spanId);
    expect(server!.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'echo',
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.call.arguments': '{"s":"hi"}',
      'tether.era': sdk.era,
    });
    expect(typeof server!.attributes['jsonrpc.request.id']).toBe('string');
    expect(server!.attributes['gen_ai.tool.call.result']).toContain('"hi"');
    expect(server!.attributes['mcp.protocol.version']).toBe(sdk.era === 'modern' ? '2026-07-28' : '2025-11-25');
    if (sdk.era === 'legacy') expect(server!.attributes['mcp.session.id']).toBe('sess-1');
    else expect(server!.attributes['mcp.session.id']).toBeUndefined();
    expect(server!.attributes['error.type']).toBeUndefined();
    expect(server!.status.code).toBe(SpanStatusCode.UNSET);

    const metrics = await kit.collect();
    const op = histogram(metrics.get('mcp.server.operation.duration')).find(
      (p) => p.attributes['gen_ai.tool.name'] === 'echo',
    );
    expect(op?.value.count).toBeGreaterThanOrEqual(1);
    expect(op?.value.buckets.boundaries).toEqual(DURATION_BUCKETS_S);
    expect(op?.attributes['jsonrpc.request.id']).toBeUndefined();
    expect(op?.attributes['mcp.session.id']).toBeUndefined();
    expect(metrics.get('mcp.server.operation.duration')?.descriptor.unit).toBe('s');
    const clientOp = histogram(metrics.get('mcp.client.operation.duration')).find(
      (p) => p.attributes['gen_ai.tool.name'] === 'echo',
    );
    expect(clientOp?.value.count).toBeGreaterThanOrEqual(1);
    const inFlight = sum(metrics.get('tether.calls.in_flight')).find(
      (p) => p.attributes['gen_ai.tool.name'] === 'echo',
    );
    expect(inFlight?.value).toBe(0);
    expect(errors).toEqual([]);
    await client.close();
  });

  it('errors: isError is tool_error, a throw in a tool is tool_error, a JSON-RPC error code is its code', async () => {
    const errors: unknown[] = [];
    const client = await sdk.connect(serverOf(sdk, errors));
    await client.callTool('refuse');
    await client.callTool('throws');
    const fault = await client.client.getPrompt({ name: 'faulty' }).catch((e: { code?: number }) => e);
    expect(fault.code).toBe(-32001);
    const refuse = kit.named('tools/call refuse')[0]!;
    expect(refuse.attributes['error.type']).toBe('tool_error');
    expect(refuse.status.code).toBe(SpanStatusCode.ERROR);
    const thrown = kit.named('tools/call throws')[0]!;
    expect(thrown.attributes['error.type']).toBe('tool_error');
    const protocol = kit.named('prompts/get faulty')[0]!;
    expect(protocol.attributes['rpc.response.status_code']).toBe('-32001');
    expect(protocol.attributes['error.type']).toBe('-32001');
    const metrics = await kit.collect();
    const points = histogram(metrics.get('mcp.server.operation.duration'));
    expect(points.find((p) => p.attributes['gen_ai.tool.name'] === 'refuse')?.attributes['error.type']).toBe(
      'tool_error',
    );
    expect(
      points.find((p) => p.attributes['gen_ai.prompt.name'] === 'faulty')?.attributes['rpc.response.status_code'],
    ).toBe('-32001');
    await client.close();
  });

  it('prompts/get and resources/read', async () => {
    const errors: unknown[] = [];
    const client = await sdk.connect(serverOf(sdk, errors));
    instrumentClient(client.client);
    await client.client.getPrompt({ name: 'greet', arguments: { who: 'ann' } });
    await client.client.readResource({ uri: 'mem://doc/1' });
    const [prompt] = kit.named('prompts/get greet').filter((s) => s.kind === SpanKind.SERVER);
    expect(prompt?.attributes).toMatchObject({
      'mcp.method.name': 'prompts/get',
      'gen_ai.prompt.name': 'greet',
      'gen_ai.prompt.variable.who': 'ann',
    });
    expect(prompt?.attributes['gen_ai.operation.name']).toBeUndefined();
    const [read] = kit.named('resources/read').filter((s) => s.kind === SpanKind.SERVER);
    const [readClient] = kit.named('resources/read').filter((s) => s.kind === SpanKind.CLIENT);
    expect(read?.attributes).toMatchObject({ 'mcp.method.name': 'resources/read', 'mcp.resource.uri': 'mem://doc/1' });
    expect(read?.parentSpanContext?.spanId).toBe(readClient?.spanContext().spanId);
    expect(errors).toEqual([]);
    await client.close();
  });

  it('the ambient span (a transport span) is linked, not the parent', async () => {
    const errors: unknown[] = [];
    const client = await sdk.connect(serverOf(sdk, errors));
    const transportSpan = trace.getTracer('test').startSpan('POST /mcp');
    await context.with(trace.setSpan(context.active(), transportSpan), () =>
      client.client.callTool({ name: 'echo', arguments: { s: 'x' } }),
    );
    transportSpan.end();
    const [server] = kit.named('tools/call echo').filter((s) => s.kind === SpanKind.SERVER);
    // no params._meta trace context: a new trace, linked to the transport span the call arrived in
    expect(server?.parentSpanContext).toBeUndefined();
    expect(server?.spanContext().traceId).not.toBe(transportSpan.spanContext().traceId);
    expect(server?.links.map((l) => [l.context.spanId, l.attributes?.['tether.link']])).toEqual([
      [transportSpan.spanContext().spanId, 'transport'],
    ]);
    await client.close();
  });
});
