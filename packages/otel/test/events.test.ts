/**
 * What only tether sees, on the call span and in tether.* metrics: progress, cancellation, lock
 * waits, MRTR rounds and jobs, on every SDK line and era, with a real SDK recording.
 */
import { cancel } from '@mcp-tether/cancel';
import { handler, progressEvent } from '@mcp-tether/core';
import { until } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer } from '@mcp-tether/testing/matrix';
import { jobs } from '@mcp-tether/jobs';
import { ask, mrtr, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { mutex } from '@mcp-tether/mutex';
import { progressMiddleware } from '@mcp-tether/progress';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { otel } from '../src/index.js';
import { histogram, type OtelKit, registerSdk, sum } from './kit.js';

let kit: OtelKit;
beforeAll(() => {
  kit = registerSdk({ delta: true });
});
afterAll(() => kit.shutdown());
beforeEach(async () => {
  kit.reset();
  await kit.collect(); // delta temporality: each test sees only its own records
});

const approval = { go: ask.boolean('Go ahead') };
const eventNames = (s: ReadableSpan | undefined) => (s?.events ?? []).map((e) => e.name);
const server = (s: string) => kit.named(s).filter((x) => x.kind === SpanKind.SERVER);
const principal = (sdk: { era: string }, who: string): Record<string, unknown> =>
  sdk.era === 'modern' ? { authInfo: { token: `token-${who}`, clientId: who, scopes: [] } } : {};

describeEachSdk('otel: tether signals on spans and metrics', (sdk) => {
  it('progress: first and last sent as events, counts of sent and coalesced, never one event per notification', async () => {
    const errors: unknown[] = [];
    const client = await sdk.connect(() => {
      const { server: s } = tetheredServer(sdk, [otel(), progressMiddleware({ minIntervalMs: 60_000 })], errors);
      s.registerTool(
        'count',
        { inputSchema: {} },
        handler(async function* () {
          for (let i = 1; i <= 50; i++) yield progressEvent(i, 50);
          return { content: [{ type: 'text', text: 'done' }] };
        }),
      );
      return s;
    });
    await client.callTool('count', {}, { progressToken: 'p' });
    const [span] = server('tools/call count');
    // the throttle lets the first value out, holds back the rest, flushes the last: 2 sent, 48 coalesced
    expect(span?.attributes['tether.progress.sent']).toBe(2);
    expect(span?.attributes['tether.progress.coalesced']).toBe(48);
    expect(eventNames(span).filter((n) => n.startsWith('tether.progress'))).toEqual([
      'tether.progress.first',
      'tether.progress.last',
    ]);
    const last = span?.events.find((e) => e.name === 'tether.progress.last');
    expect(last?.attributes?.['tether.progress']).toBe(50);
    const m = await kit.collect();
    const notes = sum(m.get('tether.notifications')).filter((p) => p.attributes['gen_ai.tool.name'] === 'count');
    const by = (o: string) => notes.find((p) => p.attributes['tether.notification.outcome'] === o)?.value;
    expect(by('sent')).toBe(2);
    expect(by('coalesced')).toBe(48);
    expect(errors).toEqual([]);
    await client.close();
  });

  it('cancellation: the span says who stopped the call and why; tether.cancellations counts it', async () => {
    const errors: unknown[] = [];
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    const client = await sdk.connect(() => {
      const { server: s } = tetheredServer(sdk, [otel(), cancel()], errors);
      s.registerTool('wait', { inputSchema: {} }, async (_a: unknown, ctx: { signal: AbortSignal }) => {
        started();
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        return { content: [{ type: 'text', text: 'stopped' }] };
      });
      return s;
    });
    const call = client.start('wait', {});
    await running;
    await call.cancel('user pressed stop');
    await until(() => server('tools/call wait').length === 1, 10_000, 'the call span ended');
    const [span] = server('tools/call wait');
    // 2026-07-28: the client closes the call's stream; the server sees a cancel or the disconnect, whichever lands first
    const who = String(span?.attributes['tether.cancel.who']);
    expect(sdk.era === 'legacy' ? ['cancelled'] : ['cancelled', 'disconnect']).toContain(who);
    expect(span?.attributes['error.type']).toBe(who);
    expect(span?.attributes['tether.cancel.who']).toBe(who);
    const event = span?.events.find((e) => e.name === 'tether.cancel');
    expect(event?.attributes?.['tether.cancel.who']).toBe(who);
    if (sdk.era === 'legacy') expect(String(event?.attributes?.['tether.cancel.why'])).toContain('user pressed stop');
    const m = await kit.collect();
    const c = sum(m.get('tether.cancellations')).find((p) => p.attributes['gen_ai.tool.name'] === 'wait');
    expect(c?.attributes['tether.cancel.who']).toBe(who);
    expect(c?.value).toBeGreaterThanOrEqual(1);
    expect(
      histogram(m.get('mcp.server.operation.duration')).find((p) => p.attributes['gen_ai.tool.name'] === 'wait')
        ?.attributes['error.type'],
    ).toBe(who);
    await client.close();
  });

  it('mutex: the waiting call records its wait (key, queue depth, outcome); the lock wait histogram counts both', async () => {
    const errors: unknown[] = [];
    const lock = mutex();
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let entered = 0;
    const client = await sdk.connect(() => {
      const { server: s } = tetheredServer(sdk, [otel(), lock], errors);
      s.registerTool('write', { inputSchema: {}, annotations: { destructiveHint: true } }, async () => {
        entered++;
        await gate;
        return { content: [{ type: 'text', text: 'written' }] };
      });
      return s;
    });
    const first = client.callTool('write', {});
    await until(() => entered === 1, 10_000, 'the first call holds the lock');
    const second = client.callTool('write', {});
    await until(() => lock.stats().queued === 1, 10_000, 'the second call waits');
    release();
    await Promise.all([first, second]);
    const spans = server('tools/call write');
    expect(spans).toHaveLength(2);
    const waits = spans.map((s) => s.events.find((e) => e.name === 'tether.lock.wait')?.attributes);
    expect(waits.map((w) => w?.['tether.lock.outcome'])).toEqual(['acquired', 'acquired']);
    expect(waits.map((w) => w?.['tether.lock.queue_depth']).sort()).toEqual([0, 1]);
    expect(waits.every((w) => typeof w?.['tether.lock.key'] === 'string')).toBe(true);
    const m = await kit.collect();
    const wait = histogram(m.get('tether.lock.wait.duration')).find(
      (p) => p.attributes['gen_ai.tool.name'] === 'write',
    );
    expect(wait?.value.count).toBe(2);
    expect(errors).toEqual([]);
    await client.close();
  });

  it('MRTR: each round is an event on the span that asked (elicit in-process on 2025, input_required on 2026)', async () => {
    const errors: unknown[] = [];
    const client = await sdk.connect(
      () => {
        const { server: s } = tetheredServer(sdk, [otel(), mrtr()], errors);
        s.registerTool(
          'confirm',
          { inputSchema: {} },
          handler(async () => {
            const answer = readInputResult(approval);
            if (!answer) return requireInput.elicit('Proceed?', approval);
            return { content: [{ type: 'text', text: 'answered' }] };
          }),
        );
        return s;
      },
      { elicit: [{ action: 'accept', content: { go: true } }] },
    );
    const r = await client.callTool('confirm', {});
    expect(r.content[0].text).toBe('answered');
    const spans = server('tools/call confirm');
    const rounds = spans.flatMap((s) => s.events.filter((e) => e.name === 'tether.mrtr.round'));
    expect(rounds).toHaveLength(1);
    expect(rounds[0]?.attributes?.['tether.mrtr.mode']).toBe(sdk.era === 'modern' ? 'input_required' : 'elicit');
    if (sdk.era === 'modern') {
      expect(spans).toHaveLength(2); // the round trip is two requests
      expect(spans.some((s) => s.attributes['tether.result_type'] === 'input_required')).toBe(true);
    }
    const m = await kit.collect();
    expect(sum(m.get('tether.mrtr.rounds')).find((p) => p.attributes['gen_ai.tool.name'] === 'confirm')?.value).toBe(1);
    expect(errors).toEqual([]);
    await client.close();
  });

  it('jobs: the execution is its own span, child of and linked to the call span; status changes are events and counts', async () => {
    const errors: unknown[] = [];
    const j = jobs({ tools: ['slow'], inlineMs: 0 });
    const client = await sdk.connect(() => {
      const { server: s } = tetheredServer(sdk, [otel(), cancel(), j], errors);
      j.registerTools(s as never);
      s.registerTool('slow', { inputSchema: { ms: z.number() } }, async ({ ms }: { ms: number }) => {
        await new Promise((r) => setTimeout(r, ms));
        return { content: [{ type: 'text', text: 'slow done' }] };
      });
      return s;
    }, principal(sdk, 'alice') as never);
    const first = await client.callTool('slow', { ms: 50 });
    const jobId = first.structuredContent?.jobId as string;
    expect(typeof jobId).toBe('string');
    let r = first;
    for (let i = 0; i < 20 && r.structuredContent?.status !== 'completed'; i++)
      r = await client.callTool('jobs.status', { jobId, waitMs: 2_000 });
    expect(r.structuredContent?.status).toBe('completed');
    await until(() => kit.named('job slow').length === 1, 10_000, 'the job span ended');
    const [job] = kit.named('job slow');
    const [call] = server('tools/call slow');
    expect(job?.spanContext().traceId).toBe(call?.spanContext().traceId);
    expect(job?.parentSpanContext?.spanId).toBe(call?.spanContext().spanId);
    expect(job?.links.map((l) => l.context.spanId)).toEqual([call?.spanContext().spanId]);
    expect(job?.attributes).toMatchObject({
      'gen_ai.tool.name': 'slow',
      'tether.job.id': jobId,
      'tether.job.status': 'completed',
    });
    expect(eventNames(job)).toContain('tether.job.status');
    expect(server('tools/call jobs.status').length).toBeGreaterThanOrEqual(1);
    const m = await kit.collect();
    const statuses = sum(m.get('tether.jobs')).filter((p) => p.attributes['gen_ai.tool.name'] === 'slow');
    expect(statuses.find((p) => p.attributes['tether.job.status'] === 'started')?.value).toBe(1);
    expect(statuses.find((p) => p.attributes['tether.job.status'] === 'completed')?.value).toBe(1);
    expect(sum(m.get('tether.jobs.active')).find((p) => p.attributes['gen_ai.tool.name'] === 'slow')?.value).toBe(0);
    expect(
      histogram(m.get('tether.job.duration')).find((p) => p.attributes['gen_ai.tool.name'] === 'slow')?.value.count,
    ).toBe(1);
    expect(errors).toEqual([]);
    await client.close();
  });
});
