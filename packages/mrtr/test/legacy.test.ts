/**
 * 2025-era sessions, on the wire: a real SDK client and server through @mcp-tether/core/testing.
 */
import { ErrorCode, handler, refusalCode, tether, type Middleware, type OutboundEvent } from '@mcp-tether/core';
import { connect, connectHttp, serveHttp, type HttpHarness, type TestClient } from '@mcp-tether/core/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ask, canElicit, mrtr, readInput, readInputResult, readRequestState, requireInput, type MrtrOptions } from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (r: any): string => r.content?.[0]?.text;

let kit: TestClient | undefined;
let http: HttpHarness | undefined;
afterEach(async () => {
  await kit?.close();
  await http?.close();
  kit = undefined;
  http = undefined;
});

/** Records the input events that pass it (install it outside mrtr). */
function inputTap(seen: OutboundEvent[]): Middleware {
  return {
    name: 'input-tap',
    onEvent(_ctx, event, next) {
      if (event.type === 'input') seen.push(event);
      return next(event);
    },
  };
}

const approval = { confirm: ask.boolean('Approve the refund') };

/** The seed's refund tool. Counts how often its body runs and how often its finally runs. */
function refundServer(counts = { body: 0, finally: 0, refunded: 0 }, options: MrtrOptions = {}, outer: Middleware[] = []) {
  const server = tether(new McpServer({ name: 'billing', version: '1.0.0' }), [...outer, mrtr(options)]);
  server.registerTool('billing.refund', { inputSchema: { id: z.string() }, annotations: { destructiveHint: true } }, handler(async (args) => {
    counts.body++; // the body before the ask runs once per round
    try {
      const invoice = { id: args.id, amountCents: 1250, customer: 'ACME' };
      const answer = readInputResult(approval);
      if (!answer) {
        return requireInput.elicit(`Refund ${invoice.amountCents / 100} to ${invoice.customer}?`, approval);
      }
      if (answer.action !== 'accept' || !answer.content.confirm) {
        return { content: [{ type: 'text' as const, text: `not refunded (${answer.action})` }] };
      }
      counts.refunded++;
      return { content: [{ type: 'text' as const, text: `refunded ${invoice.id}` }] };
    } finally {
      counts.finally++;
    }
  }));
  return { server, counts };
}

describe('refund tool, client with elicitation: { form: {} }', () => {
  it('accept: the tool completes; one elicitation/create related to the call; the body ran once per round', async () => {
    const events: OutboundEvent[] = [];
    const { server, counts } = refundServer(undefined, {}, [inputTap(events)]);
    kit = await connect(server, { capabilities: { elicitation: { form: {} } }, elicit: [{ action: 'accept', content: { confirm: true } }] });
    const r = await kit.callTool('billing.refund', { id: 'inv-7' });
    expect(text(r)).toBe('refunded inv-7');
    expect(r.isError).toBeFalsy();
    expect(counts).toEqual({ body: 2, finally: 2, refunded: 1 });

    const asked = kit.wire.serverRequests('elicitation/create');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.message.id).not.toBe(0); // core starts outbound ids at 1, so an SDK 1.x client can cancel it
    expect(asked[0]!.message.params).toEqual({
      mode: 'form',
      message: 'Refund 12.5 to ACME?',
      requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean', description: 'Approve the refund' } }, required: ['confirm'] },
    });
    // sent while the call was pending, before its response
    const call = kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!;
    const response = kit.wire.responseTo(call.message.id)!;
    expect(asked[0]!.seq).toBeGreaterThan(call.seq);
    expect(asked[0]!.seq).toBeLessThan(response.seq);
    expect(events).toEqual([{ type: 'input', key: 'confirm', round: 1, request: { method: 'elicitation/create', params: asked[0]!.message.params } }]);
  });

  it('decline: the tool returns its own "not refunded" result; nothing refunded', async () => {
    const { server, counts } = refundServer();
    kit = await connect(server, { elicit: [{ action: 'decline' }] });
    const r = await kit.callTool('billing.refund', { id: 'inv-8' });
    expect(text(r)).toBe('not refunded (decline)');
    expect(counts).toEqual({ body: 2, finally: 2, refunded: 0 });
  });

  it('cancel and an accepted "no" are told apart from decline', async () => {
    const { server } = refundServer();
    kit = await connect(server, { elicit: [{ action: 'cancel' }, { action: 'accept', content: { confirm: false } }] });
    expect(text(await kit.callTool('billing.refund', { id: 'a' }))).toBe('not refunded (cancel)');
    expect(text(await kit.callTool('billing.refund', { id: 'b' }))).toBe('not refunded (accept)');
  });
});

describe('requestedSchema equals the conformance fixtures', () => {
  it('test_elicitation_sep1034_defaults', async () => {
    const form = {
      name: ask.string('User name').default('John Doe'),
      age: ask.integer('User age').default(30),
      score: ask.number('User score').default(95.5),
      status: ask.enum(['active', 'inactive', 'pending'], 'User status').default('active'),
      verified: ask.boolean('Verification status').default(true),
    };
    const server = tether(new McpServer({ name: 'fixtures', version: '1' }), [mrtr()]);
    server.registerTool('test_elicitation_sep1034_defaults', { inputSchema: {} }, handler(async () => {
      const r = readInputResult(form);
      if (!r) return requireInput.elicit('Please review and update the form fields with defaults', form);
      return { content: [{ type: 'text' as const, text: `Elicitation completed: action=${r.action}, content=${JSON.stringify(r.action === 'accept' ? r.content : {})}` }] };
    }));
    // The conformance client answers with other values.
    kit = await connect(server, { elicit: [{ action: 'accept', content: { name: 'Jane Smith', age: 25, score: 88.0, status: 'inactive', verified: false } }] });
    const r = await kit.callTool('test_elicitation_sep1034_defaults', {});
    expect(kit.elicitations[0]!.params).toEqual({
      mode: 'form',
      message: 'Please review and update the form fields with defaults',
      requestedSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', description: 'Verification status', default: true },
        },
        required: [],
      },
    });
    expect(text(r)).toBe('Elicitation completed: action=accept, content={"name":"Jane Smith","age":25,"score":88,"status":"inactive","verified":false}');
  });

  it('test_elicitation_sep1330_enums', async () => {
    const form = {
      untitledSingle: ask.enum(['option1', 'option2', 'option3'], 'Select one option').optional(),
      titledSingle: ask
        .enum(
          [
            { value: 'value1', title: 'First Option' },
            { value: 'value2', title: 'Second Option' },
            { value: 'value3', title: 'Third Option' },
          ],
          'Select one option with titles',
        )
        .optional(),
      legacyEnum: ask.enum({ opt1: 'Option One', opt2: 'Option Two', opt3: 'Option Three' }, 'Select one option (legacy)').legacy().optional(),
      untitledMulti: ask.enum(['option1', 'option2', 'option3'], 'Select multiple options').multiple({ min: 1, max: 3 }).optional(),
      titledMulti: ask
        .enum({ value1: 'First Choice', value2: 'Second Choice', value3: 'Third Choice' }, 'Select multiple options with titles')
        .multiple({ min: 1, max: 3 })
        .optional(),
    };
    const server = tether(new McpServer({ name: 'fixtures', version: '1' }), [mrtr()]);
    server.registerTool('test_elicitation_sep1330_enums', { inputSchema: {} }, handler(async () => {
      const values = readInput(form);
      if (!values) return requireInput.elicit('Please select options from the enum fields', form);
      // typed: string unions and arrays of them
      const picked: Array<'value1' | 'value2' | 'value3'> | undefined = values.titledMulti;
      return { content: [{ type: 'text' as const, text: `${values.untitledSingle} ${values.titledSingle} ${values.legacyEnum} ${values.untitledMulti?.join('|')} ${picked?.join('|')}` }] };
    }));
    kit = await connect(server, {
      elicit: [{ action: 'accept', content: { untitledSingle: 'option1', titledSingle: 'value1', legacyEnum: 'opt1', untitledMulti: ['option1', 'option2'], titledMulti: ['value1', 'value2'] } }],
    });
    const r = await kit.callTool('test_elicitation_sep1330_enums', {});
    expect((kit.elicitations[0]!.params as any).requestedSchema).toEqual({
      type: 'object',
      properties: {
        untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
        titledSingle: {
          type: 'string',
          description: 'Select one option with titles',
          oneOf: [
            { const: 'value1', title: 'First Option' },
            { const: 'value2', title: 'Second Option' },
            { const: 'value3', title: 'Third Option' },
          ],
        },
        legacyEnum: { type: 'string', description: 'Select one option (legacy)', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
        untitledMulti: { type: 'array', description: 'Select multiple options', minItems: 1, maxItems: 3, items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
        titledMulti: {
          type: 'array',
          description: 'Select multiple options with titles',
          minItems: 1,
          maxItems: 3,
          items: {
            anyOf: [
              { const: 'value1', title: 'First Choice' },
              { const: 'value2', title: 'Second Choice' },
              { const: 'value3', title: 'Third Choice' },
            ],
          },
        },
      },
      required: [],
    });
    expect(text(r)).toBe('option1 value1 opt1 option1|option2 value1|value2');
  });
});

describe('no way to ask: an immediate ELICITATION_UNSUPPORTED, nothing on the wire', () => {
  it('client without the elicitation capability', async () => {
    const { server, counts } = refundServer();
    kit = await connect(server, { capabilities: {} });
    const r = await kit.callTool('billing.refund', { id: 'x' });
    expect(refusalCode(r)).toBe(ErrorCode.ELICITATION_UNSUPPORTED);
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(0);
    expect(counts.body).toBe(1);
  });

  it('client declaring only url mode, asked for a form', async () => {
    const { server } = refundServer();
    kit = await connect(server, { capabilities: { elicitation: { url: {} } }, elicit: [{ action: 'accept' }] });
    const r = await kit.callTool('billing.refund', { id: 'x' });
    expect(refusalCode(r)).toBe(ErrorCode.ELICITATION_UNSUPPORTED);
    expect((r.structuredContent as any).requiredCapabilities).toEqual({ elicitation: { form: {} } });
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(0);
    expect(kit.elicitations).toHaveLength(0);
  });

  it('client declaring `elicitation: {}` (form only), asked for a URL', async () => {
    const server = tether(new McpServer({ name: 't', version: '1' }), [mrtr()]);
    server.registerTool('connect', { inputSchema: {} }, handler(async () => requireInput.url('Sign in to Example', 'https://example.com/consent')));
    kit = await connect(server, { capabilities: { elicitation: {} }, elicit: [{ action: 'accept' }] });
    expect(refusalCode(await kit.callTool('connect', {}))).toBe(ErrorCode.ELICITATION_UNSUPPORTED);
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(0);
  });

  it('stateless Streamable HTTP: refused at once (under 1 s), no elicitation/create', async () => {
    http = await serveHttp(() => refundServer().server, { stateful: false });
    kit = await connectHttp(http.url, { elicit: [{ action: 'accept', content: { confirm: true } }] });
    await kit.ping(); // warm up the HTTP path, so the measure is the call alone
    const t0 = performance.now();
    const r = await kit.callTool('billing.refund', { id: 'x' });
    const elapsed = performance.now() - t0;
    expect(refusalCode(r)).toBe(ErrorCode.ELICITATION_UNSUPPORTED);
    expect(text(r)).toMatch(/stateless HTTP/);
    expect(elapsed).toBeLessThan(1_000);
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(0);
    expect(kit.elicitations).toHaveLength(0);
  });
});

describe('live channels', () => {
  it('stateful Streamable HTTP: the elicitation rides the POST stream of its tools/call', async () => {
    http = await serveHttp(() => refundServer().server, { stateful: true });
    kit = await connectHttp(http.url, { elicit: [{ action: 'accept', content: { confirm: true } }] });
    const r = await kit.callTool('billing.refund', { id: 'inv-9' });
    expect(text(r)).toBe('refunded inv-9');
    const asked = kit.wire.serverRequests('elicitation/create');
    expect(asked).toHaveLength(1);
    const callId = kit.wire.fromClient().find((m) => m.message.method === 'tools/call')!.message.id;
    expect(asked[0]!.stream).toEqual({ kind: 'post', requestIds: [callId] });
  });

  it('URL mode on 2025-11-25: elicitationId added; accept re-enters the handler', async () => {
    const server = tether(new McpServer({ name: 't', version: '1' }), [mrtr()]);
    server.registerTool('connect', { inputSchema: {} }, handler(async () => {
      const r = readInputResult('consent');
      if (!r) return requireInput.url('Sign in to Example to continue', 'https://example.com/consent?flow=42', { key: 'consent' });
      return { content: [{ type: 'text' as const, text: `consent: ${r.action}` }] };
    }));
    kit = await connect(server, { capabilities: { elicitation: { url: {} } }, elicit: [{ action: 'accept' }] });
    expect(text(await kit.callTool('connect', {}))).toBe('consent: accept');
    const params = kit.elicitations[0]!.params as any;
    expect(params).toMatchObject({ mode: 'url', message: 'Sign in to Example to continue', url: 'https://example.com/consent?flow=42' });
    expect(params.elicitationId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a 2025-06-18 session gets elicitation/create without the `mode` field', async () => {
    const { server } = refundServer();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const send = clientSide.send.bind(clientSide);
    // the SDK client always asks for its latest version; rewrite its initialize to ask for 2025-06-18
    clientSide.send = (m: any, o) => send(m.method === 'initialize' ? { ...m, params: { ...m.params, protocolVersion: '2025-06-18' } } : m, o);
    const client = new Client({ name: 'old', version: '1' }, { capabilities: { elicitation: {} } });
    const received: any[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      received.push(req.params);
      return { action: 'accept', content: { confirm: true } };
    });
    await server.connect(serverSide);
    await client.connect(clientSide);
    try {
      expect(client.getServerVersion()).toBeDefined();
      const r = await client.callTool({ name: 'billing.refund', arguments: { id: 'old' } });
      expect(text(r)).toBe('refunded old');
      expect(received).toHaveLength(1);
      expect(received[0]).not.toHaveProperty('mode');
      expect(received[0].requestedSchema.required).toEqual(['confirm']);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('canElicit() tells the handler whether it can ask, so it can fall back', async () => {
    const server = tether(new McpServer({ name: 't', version: '1' }), [mrtr()]);
    server.registerTool('probe', { inputSchema: {} }, handler(async () => ({ content: [{ type: 'text' as const, text: `${canElicit()} ${canElicit('url')}` }] })));
    kit = await connect(server, { capabilities: { elicitation: { form: {} } } });
    expect(text(await kit.callTool('probe', {}))).toBe('true false');
  });
});

describe('rounds and validation', () => {
  const pick = { n: ask.integer('A number from 1 to 10').min(1).max(10) };
  function pickServer(counts = { body: 0 }, options: MrtrOptions = {}) {
    const server = tether(new McpServer({ name: 't', version: '1' }), [mrtr(options)]);
    server.registerTool('pick', { inputSchema: {} }, handler(async () => {
      counts.body++;
      const v = readInput(pick);
      if (!v) return requireInput.elicit('Pick a number', pick);
      return { content: [{ type: 'text' as const, text: `picked ${v.n}` }] };
    }));
    return { server, counts };
  }

  it('invalid content is asked again and counts as a round', async () => {
    const { server, counts } = pickServer();
    kit = await connect(server, { elicit: [{ action: 'accept', content: { n: 11 } }, { action: 'accept', content: { n: 'seven' } }, { action: 'accept', content: { n: 7 } }] });
    expect(text(await kit.callTool('pick', {}))).toBe('picked 7');
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(3);
    expect(counts.body).toBe(4);
  });

  it('a client answering invalid content 9 times: MAX_ROUNDS after 8 elicitations, no 9th', async () => {
    const { server, counts } = pickServer();
    kit = await connect(server, { elicit: Array.from({ length: 9 }, () => ({ action: 'accept' as const, content: { n: 0 } })) });
    const r = await kit.callTool('pick', {});
    expect(refusalCode(r)).toBe(ErrorCode.MAX_ROUNDS);
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(8);
    expect(counts.body).toBe(9);
  });

  it('maxRounds is configurable', async () => {
    const { server } = pickServer(undefined, { maxRounds: 2 });
    kit = await connect(server, { elicit: [{ action: 'accept', content: {} }] });
    expect(refusalCode(await kit.callTool('pick', {}))).toBe(ErrorCode.MAX_ROUNDS);
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(2);
  });

  it('answers accumulate across rounds; the continuation payload comes back', async () => {
    const amount = { amount: ask.number('Amount in EUR').min(0.01) };
    const reason = { reason: ask.string('Why?').minLength(3), note: ask.string('Note').optional() };
    const seen: unknown[] = [];
    const server = tether(new McpServer({ name: 't', version: '1' }), [mrtr()]);
    server.registerTool('partial-refund', { inputSchema: { id: z.string() } }, handler(async (args) => {
      seen.push(readRequestState());
      const a = readInput(amount);
      if (!a) return requireInput.elicit('How much?', amount, { state: { id: args.id, step: 1, at: new Date(0) } });
      const b = readInput(reason);
      if (!b) return requireInput.elicit('Why?', reason, { state: { id: args.id, step: 2 } });
      return { content: [{ type: 'text' as const, text: `${readInput<number>('amount')} for ${b.reason} (${b.note ?? 'no note'}) key=${JSON.stringify(readInputResult('reason+note'))}` }] };
    }));
    kit = await connect(server, { elicit: [{ action: 'accept', content: { amount: 5 } }, { action: 'accept', content: { reason: 'broken', extra: 'ignored' } }] });
    const r = await kit.callTool('partial-refund', { id: 'inv-1' });
    expect(text(r)).toBe('5 for broken (no note) key={"action":"accept","content":{"reason":"broken"}}');
    // state is a JSON copy (the Date became a string), the same as on the 2026 wire
    expect(seen).toEqual([undefined, { id: 'inv-1', step: 1, at: '1970-01-01T00:00:00.000Z' }, { id: 'inv-1', step: 2 }]);
  });

  it('no answer within timeoutMs: a TIMEOUT refusal, and the client is told to withdraw the elicitation', async () => {
    const { server } = refundServer(undefined, { timeoutMs: 300 });
    kit = await connect(server, { elicit: (_p, { signal }) => new Promise((resolve) => signal.addEventListener('abort', () => resolve({ action: 'cancel' }))) });
    const r = await kit.callTool('billing.refund', { id: 'slow' });
    expect(refusalCode(r)).toBe(ErrorCode.TIMEOUT);
    const id = kit.wire.serverRequests('elicitation/create')[0]!.message.id;
    await kit.wire.waitFor((m) => m.message.method === 'notifications/cancelled' && m.message.params?.requestId === id, 2_000);
    expect(kit.elicitations[0]!.signal.aborted).toBe(true);
  });

  it('a client that answers the elicitation with a JSON-RPC error: ELICITATION_UNSUPPORTED', async () => {
    const { server } = refundServer();
    kit = await connect(server, {
      elicit: () => {
        throw new Error('no UI available');
      },
    });
    const r = await kit.callTool('billing.refund', { id: 'x' });
    expect(refusalCode(r)).toBe(ErrorCode.ELICITATION_UNSUPPORTED);
    expect(text(r)).toMatch(/no UI available/);
  });
});

describe('cancellation', () => {
  it('cancelling the call while its elicitation is pending withdraws it; the finally ran; no response', async () => {
    const counts = { body: 0, finally: 0, refunded: 0 };
    const { server } = refundServer(counts);
    kit = await connect(server, { elicit: (_p, { signal }) => new Promise((resolve) => signal.addEventListener('abort', () => resolve({ action: 'cancel' }))) });
    const call = kit.start('billing.refund', { id: 'inv-c' }, { id: 'call-1' });
    const asked = await kit.wire.waitFor((m) => m.message.method === 'elicitation/create', 5_000);
    await call.cancel('user pressed stop');
    // the SDK sends notifications/cancelled for the elicitation (bound to the call's signal)
    await kit.wire.waitFor((m) => m.direction === 'server->client' && m.message.method === 'notifications/cancelled' && m.message.params?.requestId === asked.message.id, 2_000);
    for (let i = 0; i < 100 && !kit.elicitations[0]?.signal.aborted; i++) await sleep(10);
    expect(kit.elicitations[0]!.signal.aborted).toBe(true);
    await sleep(100);
    expect(kit.wire.responseTo('call-1')).toBeUndefined();
    // the handler returned its ask (its finally ran) and was not entered again
    expect(counts).toEqual({ body: 1, finally: 1, refunded: 0 });
    await kit.ping(); // the server is fine
  });
});

describe('prompts', () => {
  it('prompts/get can ask too; a refusal there is a JSON-RPC error with data.code', async () => {
    const topic = { topic: ask.string('Topic') };
    const server = tether(new McpServer({ name: 't', version: '1' }), [mrtr()]);
    server.registerPrompt('brainstorm', {}, (async () => {
      const v = readInput(topic);
      if (!v) return requireInput.elicit('What about?', topic);
      return { messages: [{ role: 'user', content: { type: 'text', text: `Ideas about ${v.topic}` } }] };
    }) as any);
    kit = await connect(server, { elicit: [{ action: 'accept', content: { topic: 'tea' } }] });
    const r = await kit.client.getPrompt({ name: 'brainstorm' });
    expect((r.messages[0]!.content as any).text).toBe('Ideas about tea');

    await kit.close();

    const bare = tether(new McpServer({ name: 't', version: '1' }), [mrtr()]);
    bare.registerPrompt('brainstorm', {}, (async () => requireInput.elicit('What about?', topic)) as any);
    kit = await connect(bare, { capabilities: {} });
    const err = await kit.client.getPrompt({ name: 'brainstorm' }).then(() => undefined, (e: any) => e);
    expect(err?.code).toBe(-32603);
    expect(err?.data).toMatchObject({ code: ErrorCode.ELICITATION_UNSUPPORTED });
  });
});
