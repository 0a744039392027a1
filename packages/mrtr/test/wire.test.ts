/**
 * The mrtr middleware on the wire, on every SDK line and era (core's test matrix):
 * - `v1` and `v2-legacy`: 2025-era sessions, the middleware pushes `elicitation/create` on the call's
 *   channel and re-enters the handler in process;
 * - `v2-modern`: a v2 client pinned to 2026-07-28 through `createMcpHandler`, a fresh server (and a
 *   fresh `mrtr()`) per HTTP request; the handler's ask becomes an `input_required` result with a
 *   sealed `requestState` and the client drives the retry.
 * One test body per behaviour; era-specific assertions branch on `sdk.era`.
 */
import { ErrorCode, handler, refusalCode, tether, type Middleware, type OutboundEvent } from '@mcp-tether/core';
import { describeEachSdk, type MatrixClient, type MatrixServer, type SdkTarget } from '@mcp-tether/testing/matrix';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ask,
  canElicit,
  mrtr,
  readInput,
  readInputResult,
  readRequestState,
  requireInput,
  type MrtrOptions,
} from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const text = (r: any): string => r.content?.[0]?.text;

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
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
const CONFIRM_SCHEMA = {
  type: 'object',
  properties: { confirm: { type: 'boolean', description: 'Approve the refund' } },
  required: ['confirm'],
};

type Counts = { body: number; finally: number; refunded: number; servers: number };
const counts0 = (): Counts => ({ body: 0, finally: 0, refunded: 0, servers: 0 });

/**
 * The seed's refund tool, as a factory: every call builds a new server AND a new `mrtr()` (on
 * `v2-modern` the factory runs per HTTP request, so nothing of the middleware survives between the
 * two requests of a round trip). Counts body runs, finally runs and refunds across instances.
 */
function refundFactory(
  sdk: SdkTarget,
  counts: Counts = counts0(),
  options: MrtrOptions | (() => MrtrOptions) = {},
  outer: Middleware[] = [],
) {
  return (): MatrixServer => {
    counts.servers++;
    const server = tether(sdk.createServer({ name: 'billing', version: '1.0.0' }), [
      ...outer,
      mrtr(typeof options === 'function' ? options() : options),
    ]);
    server.registerTool(
      'billing.refund',
      { inputSchema: { id: z.string() }, annotations: { destructiveHint: true } },
      handler(async (args: { id: string }) => {
        counts.body++; // the body before the ask runs once per round
        try {
          const invoice = { id: args.id, amountCents: 1250, customer: 'ACME' };
          const answer = readInputResult(approval);
          if (!answer) {
            return requireInput.elicit(`Refund ${invoice.amountCents / 100} to ${invoice.customer}?`, approval, {
              state: { invoice: invoice.id },
            });
          }
          if (answer.action !== 'accept' || !answer.content.confirm) {
            return { content: [{ type: 'text' as const, text: `not refunded (${answer.action})` }] };
          }
          counts.refunded++;
          return {
            content: [{ type: 'text' as const, text: `refunded ${readRequestState<{ invoice: string }>()?.invoice}` }],
          };
        } finally {
          counts.finally++;
        }
      }),
    );
    // a second tool, to replay a state sealed for billing.refund on it
    server.registerTool(
      'billing.delete',
      { inputSchema: { id: z.string() } },
      handler(async () => {
        counts.body++;
        return { content: [{ type: 'text' as const, text: 'deleted' }] };
      }),
    );
    return server;
  };
}

/** The `tools/call` requests the client sent, in order. */
const toolCalls = (k: MatrixClient) => k.wire.fromClient().filter((m) => m.message.method === 'tools/call');

describeEachSdk('mrtr: refund tool, client with elicitation: { form: {} }', (sdk) => {
  it('accept: the tool completes; the body ran once per round', async () => {
    const events: OutboundEvent[] = [];
    const counts = counts0();
    kit = await sdk.connect(refundFactory(sdk, counts, {}, [inputTap(events)]), {
      capabilities: { elicitation: { form: {} } },
      elicit: [{ action: 'accept', content: { confirm: true } }],
    });
    const r = await kit.callTool('billing.refund', { id: 'inv-7' });
    expect(text(r)).toBe('refunded inv-7');
    expect(r.isError).toBeFalsy();
    expect({ body: counts.body, finally: counts.finally, refunded: counts.refunded }).toEqual({
      body: 2,
      finally: 2,
      refunded: 1,
    });
    expect(kit.elicitations).toHaveLength(1);
    const params = { mode: 'form', message: 'Refund 12.5 to ACME?', requestedSchema: CONFIRM_SCHEMA };
    expect(kit.elicitations[0]!.params).toEqual(params);
    expect(events).toEqual([
      { type: 'input', key: 'confirm', round: 1, request: { method: 'elicitation/create', params } },
    ]);

    const calls = toolCalls(kit);
    if (sdk.era === 'legacy') {
      // one tools/call; the elicitation went out while it was pending, before its response
      expect(calls).toHaveLength(1);
      const asked = kit.wire.serverRequests('elicitation/create');
      expect(asked).toHaveLength(1);
      expect(asked[0]!.message.id).not.toBe(0); // an SDK 1.x client can cancel it
      expect(asked[0]!.message.params).toEqual(params);
      expect(asked[0]!.seq).toBeGreaterThan(calls[0]!.seq);
      expect(asked[0]!.seq).toBeLessThan(kit.wire.responseTo(calls[0]!.message.id)!.seq);
      expect(counts.servers).toBe(1);
    } else {
      // two tools/call requests: the first answered input_required, the retry carries the answer
      expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(0); // no server→client request on 2026-07-28
      expect(calls).toHaveLength(2);
      const first = kit.wire.responseTo(calls[0]!.message.id)!.message.result;
      // (the SDK adds `_meta["io.modelcontextprotocol/serverInfo"]` to every 2026-07-28 result)
      expect(
        Object.keys(first)
          .filter((k) => k !== '_meta')
          .sort(),
      ).toEqual(['inputRequests', 'requestState', 'resultType']);
      expect(first.resultType).toBe('input_required');
      expect(first.inputRequests).toEqual({ confirm: { method: 'elicitation/create', params } });
      expect(first.requestState).toMatch(/^v1\.[\w-]+\.[\w-]+$/);
      expect(calls[1]!.message.id).not.toBe(calls[0]!.message.id);
      expect(calls[1]!.message.params).toMatchObject({
        name: 'billing.refund',
        arguments: { id: 'inv-7' },
        requestState: first.requestState,
        inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
      });
      expect(kit.wire.responseTo(calls[1]!.message.id)!.message.result.resultType).toBe('complete');
      // the server kept nothing: every request got a new server and a new mrtr() (server/discover + 2 calls)
      expect(counts.servers).toBe(3);
      // everything the retry needed came back inside the sealed state: the handler's payload, the
      // asked schema (to validate the answer against), the round count
      const body = JSON.parse(Buffer.from(first.requestState.split('.')[1], 'base64url').toString());
      expect(body.p).toMatchObject({
        p: { invoice: 'inv-7' },
        r: 1,
        q: { confirm: { m: 'elicitation/create', mode: 'form', s: CONFIRM_SCHEMA } },
      });
      expect(typeof body.exp).toBe('number');
    }
  });

  it('decline, cancel and an accepted "no" reach the handler, told apart', async () => {
    const counts = counts0();
    kit = await sdk.connect(refundFactory(sdk, counts), {
      elicit: [{ action: 'decline' }, { action: 'cancel' }, { action: 'accept', content: { confirm: false } }],
    });
    expect(text(await kit.callTool('billing.refund', { id: 'a' }))).toBe('not refunded (decline)');
    expect(text(await kit.callTool('billing.refund', { id: 'b' }))).toBe('not refunded (cancel)');
    expect(text(await kit.callTool('billing.refund', { id: 'c' }))).toBe('not refunded (accept)');
    expect(counts.refunded).toBe(0);
    expect(counts.body).toBe(6);
  });
});

describeEachSdk('mrtr: requestedSchema equals the conformance fixtures', (sdk) => {
  it('test_elicitation_sep1034_defaults', async () => {
    const form = {
      name: ask.string('User name').default('John Doe'),
      age: ask.integer('User age').default(30),
      score: ask.number('User score').default(95.5),
      status: ask.enum(['active', 'inactive', 'pending'], 'User status').default('active'),
      verified: ask.boolean('Verification status').default(true),
    };
    kit = await sdk.connect(
      () => {
        const server = tether(sdk.createServer({ name: 'fixtures', version: '1' }), [mrtr()]);
        server.registerTool(
          'test_elicitation_sep1034_defaults',
          { inputSchema: {} },
          handler(async () => {
            const r = readInputResult(form);
            if (!r) return requireInput.elicit('Please review and update the form fields with defaults', form);
            return {
              content: [
                {
                  type: 'text' as const,
                  text: `Elicitation completed: action=${r.action}, content=${JSON.stringify(r.action === 'accept' ? r.content : {})}`,
                },
              ],
            };
          }),
        );
        return server;
      },
      // The conformance client answers with other values.
      {
        elicit: [
          {
            action: 'accept',
            content: { name: 'Jane Smith', age: 25, score: 88.0, status: 'inactive', verified: false },
          },
        ],
      },
    );
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
          status: {
            type: 'string',
            description: 'User status',
            enum: ['active', 'inactive', 'pending'],
            default: 'active',
          },
          verified: { type: 'boolean', description: 'Verification status', default: true },
        },
        required: [],
      },
    });
    expect(text(r)).toBe(
      'Elicitation completed: action=accept, content={"name":"Jane Smith","age":25,"score":88,"status":"inactive","verified":false}',
    );
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
      legacyEnum: ask
        .enum({ opt1: 'Option One', opt2: 'Option Two', opt3: 'Option Three' }, 'Select one option (legacy)')
        .legacy()
        .optional(),
      untitledMulti: ask
        .enum(['option1', 'option2', 'option3'], 'Select multiple options')
        .multiple({ min: 1, max: 3 })
        .optional(),
      titledMulti: ask
        .enum(
          { value1: 'First Choice', value2: 'Second Choice', value3: 'Third Choice' },
          'Select multiple options with titles',
        )
        .multiple({ min: 1, max: 3 })
        .optional(),
    };
    kit = await sdk.connect(
      () => {
        const server = tether(sdk.createServer({ name: 'fixtures', version: '1' }), [mrtr()]);
        server.registerTool(
          'test_elicitation_sep1330_enums',
          { inputSchema: {} },
          handler(async () => {
            const values = readInput(form);
            if (!values) return requireInput.elicit('Please select options from the enum fields', form);
            // typed: string unions and arrays of them
            const picked: Array<'value1' | 'value2' | 'value3'> | undefined = values.titledMulti;
            return {
              content: [
                {
                  type: 'text' as const,
                  text: `${values.untitledSingle} ${values.titledSingle} ${values.legacyEnum} ${values.untitledMulti?.join('|')} ${picked?.join('|')}`,
                },
              ],
            };
          }),
        );
        return server;
      },
      {
        elicit: [
          {
            action: 'accept',
            content: {
              untitledSingle: 'option1',
              titledSingle: 'value1',
              legacyEnum: 'opt1',
              untitledMulti: ['option1', 'option2'],
              titledMulti: ['value1', 'value2'],
            },
          },
        ],
      },
    );
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
        legacyEnum: {
          type: 'string',
          description: 'Select one option (legacy)',
          enum: ['opt1', 'opt2', 'opt3'],
          enumNames: ['Option One', 'Option Two', 'Option Three'],
        },
        untitledMulti: {
          type: 'array',
          description: 'Select multiple options',
          minItems: 1,
          maxItems: 3,
          items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
        },
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

describeEachSdk('mrtr: the client cannot answer what is asked', (sdk) => {
  /**
   * 2025 era: an immediate ELICITATION_UNSUPPORTED refusal, no elicitation/create on the wire.
   * 2026-07-28: JSON-RPC -32021 (MissingRequiredClientCapability) with data.requiredCapabilities,
   * and no input_required result (so no elicitation in any inputRequests).
   */
  async function expectRefused(call: Promise<any>, requiredCapabilities: unknown) {
    if (sdk.era === 'legacy') {
      const r = await call;
      expect(refusalCode(r)).toBe(ErrorCode.ELICITATION_UNSUPPORTED);
      expect((r.structuredContent as any).requiredCapabilities).toEqual(requiredCapabilities);
    } else {
      const err = await call.then(
        () => undefined,
        (e: any) => e,
      );
      expect(err?.code).toBe(-32021);
      expect(err?.data).toMatchObject({ requiredCapabilities });
      // raised by mrtr itself (the v2 SDK has the same check behind it, with another message)
      expect(err?.message).toMatch(/^Missing required client capability: /);
      const results = kit!.wire
        .fromServer()
        .map((m) => m.message.result)
        .filter(Boolean);
      expect(results.some((res: any) => res.resultType === 'input_required')).toBe(false);
    }
    expect(kit!.wire.serverRequests('elicitation/create')).toHaveLength(0);
    expect(kit!.elicitations).toHaveLength(0);
  }

  for (const [label, capabilities] of [
    ['no capabilities', {}],
    ['only sampling', { sampling: {} }],
    ['only url-mode elicitation', { elicitation: { url: {} } }],
  ] as const) {
    it(`a form asked of a client declaring ${label}`, async () => {
      const counts = counts0();
      kit = await sdk.connect(refundFactory(sdk, counts), {
        capabilities,
        elicit: [{ action: 'accept', content: { confirm: true } }],
      });
      const call = kit.callTool('billing.refund', { id: 'x' });
      await expectRefused(call, { elicitation: { form: {} } });
      if (sdk.era === 'legacy') {
        // What the model reads: the question (so it can tell the user), that retrying as is fails, and the ways out.
        const t = text(await call);
        expect(t).toContain('"Refund 12.5 to ACME?", fields: confirm');
        expect(t).toContain('Calling it again with the same arguments gets this same refusal');
        expect(t).toContain('an MCP client that supports form-mode elicitation');
      }
      expect(counts.body).toBe(1);
      expect(counts.refunded).toBe(0);
    });
  }

  it('a URL asked of a client declaring `elicitation: {}` (form only)', async () => {
    kit = await sdk.connect(
      () => {
        const server = tether(sdk.createServer(), [mrtr()]);
        server.registerTool(
          'connect',
          { inputSchema: {} },
          handler(async () => requireInput.url('Sign in to Example', 'https://example.com/consent')),
        );
        return server;
      },
      { capabilities: { elicitation: {} }, elicit: [{ action: 'accept' }] },
    );
    await expectRefused(kit.callTool('connect', {}), { elicitation: { url: {} } });
  });

  it('`elicitation: {}` means form: the refund is asked and completes', async () => {
    kit = await sdk.connect(refundFactory(sdk), {
      capabilities: { elicitation: {} },
      elicit: [{ action: 'accept', content: { confirm: true } }],
    });
    expect(text(await kit.callTool('billing.refund', { id: 'e' }))).toBe('refunded e');
  });

  it('canElicit() tells the handler whether it can ask, so it can fall back', async () => {
    kit = await sdk.connect(
      () => {
        const server = tether(sdk.createServer(), [mrtr()]);
        server.registerTool(
          'probe',
          { inputSchema: {} },
          handler(async () => ({ content: [{ type: 'text' as const, text: `${canElicit()} ${canElicit('url')}` }] })),
        );
        return server;
      },
      { capabilities: { elicitation: { form: {} } } },
    );
    expect(text(await kit.callTool('probe', {}))).toBe('true false');
  });
});

describeEachSdk('mrtr: URL mode', (sdk) => {
  it('accept re-enters the handler; elicitationId on 2025-11-25 sessions, none on 2026-07-28', async () => {
    kit = await sdk.connect(
      () => {
        const server = tether(sdk.createServer(), [mrtr()]);
        server.registerTool(
          'connect',
          { inputSchema: {} },
          handler(async () => {
            const r = readInputResult('consent');
            if (!r)
              return requireInput.url('Sign in to Example to continue', 'https://example.com/consent?flow=42', {
                key: 'consent',
              });
            return { content: [{ type: 'text' as const, text: `consent: ${r.action}` }] };
          }),
        );
        return server;
      },
      { capabilities: { elicitation: { url: {} } }, elicit: [{ action: 'accept' }] },
    );
    expect(text(await kit.callTool('connect', {}))).toBe('consent: accept');
    const params = kit.elicitations[0]!.params as any;
    expect(params).toMatchObject({
      mode: 'url',
      message: 'Sign in to Example to continue',
      url: 'https://example.com/consent?flow=42',
    });
    if (sdk.era === 'legacy') expect(params.elicitationId).toMatch(/^[0-9a-f-]{36}$/);
    else expect(params).not.toHaveProperty('elicitationId');
  });
});

describeEachSdk('mrtr: rounds and validation', (sdk) => {
  const pick = { n: ask.integer('A number from 1 to 10').min(1).max(10) };
  function pickFactory(counts = { body: 0 }, options: MrtrOptions = {}) {
    return () => {
      const server = tether(sdk.createServer(), [mrtr(options)]);
      server.registerTool(
        'pick',
        { inputSchema: {} },
        handler(async () => {
          counts.body++;
          const v = readInput(pick);
          if (!v) return requireInput.elicit('Pick a number', pick);
          return { content: [{ type: 'text' as const, text: `picked ${v.n}` }] };
        }),
      );
      return server;
    };
  }

  it('invalid content is asked again and counts as a round', async () => {
    const counts = { body: 0 };
    kit = await sdk.connect(pickFactory(counts), {
      elicit: [
        { action: 'accept', content: { n: 11 } },
        { action: 'accept', content: { n: 'seven' } },
        { action: 'accept', content: { n: 7 } },
      ],
    });
    expect(text(await kit.callTool('pick', {}))).toBe('picked 7');
    expect(kit.elicitations).toHaveLength(3);
    expect(counts.body).toBe(4);
    if (sdk.era === 'modern') expect(toolCalls(kit)).toHaveLength(4);
  });

  it('a client answering invalid content 9 times: MAX_ROUNDS after 8 elicitations, no 9th', async () => {
    const counts = { body: 0 };
    kit = await sdk.connect(pickFactory(counts), { elicit: [{ action: 'accept', content: { n: 0 } }] });
    const r = await kit.callTool('pick', {});
    expect(refusalCode(r)).toBe(ErrorCode.MAX_ROUNDS);
    expect((r.structuredContent as any).maxRounds).toBe(8);
    expect(kit.elicitations).toHaveLength(8);
    expect(counts.body).toBe(9);
    if (sdk.era === 'legacy') expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(8);
    else expect(toolCalls(kit)).toHaveLength(9);
  });

  it('maxRounds is configurable', async () => {
    kit = await sdk.connect(pickFactory(undefined, { maxRounds: 2 }), { elicit: [{ action: 'accept', content: {} }] });
    expect(refusalCode(await kit.callTool('pick', {}))).toBe(ErrorCode.MAX_ROUNDS);
    expect(kit.elicitations).toHaveLength(2);
  });

  it('answers accumulate across rounds; the continuation payload comes back as a JSON copy', async () => {
    const amount = { amount: ask.number('Amount in EUR').min(0.01) };
    const reason = { reason: ask.string('Why?').minLength(3), note: ask.string('Note').optional() };
    const seen: unknown[] = [];
    kit = await sdk.connect(
      () => {
        const server = tether(sdk.createServer(), [mrtr()]);
        server.registerTool(
          'partial-refund',
          { inputSchema: { id: z.string() } },
          handler(async (args: { id: string }) => {
            seen.push(readRequestState());
            const a = readInput(amount);
            if (!a)
              return requireInput.elicit('How much?', amount, { state: { id: args.id, step: 1, at: new Date(0) } });
            const b = readInput(reason);
            if (!b) return requireInput.elicit('Why?', reason, { state: { id: args.id, step: 2 } });
            return {
              content: [
                {
                  type: 'text' as const,
                  text: `${readInput<number>('amount')} for ${b.reason} (${b.note ?? 'no note'}) key=${JSON.stringify(readInputResult('reason+note'))}`,
                },
              ],
            };
          }),
        );
        return server;
      },
      {
        elicit: [
          { action: 'accept', content: { amount: 5 } },
          { action: 'accept', content: { reason: 'broken', extra: 'ignored' } },
        ],
      },
    );
    const r = await kit.callTool('partial-refund', { id: 'inv-1' });
    expect(text(r)).toBe('5 for broken (no note) key={"action":"accept","content":{"reason":"broken"}}');
    // the Date became a string on both eras
    expect(seen).toEqual([
      undefined,
      { id: 'inv-1', step: 1, at: '1970-01-01T00:00:00.000Z' },
      { id: 'inv-1', step: 2 },
    ]);
  });
});

describeEachSdk('mrtr: prompts', (sdk) => {
  const topic = { topic: ask.string('Topic') };
  it('prompts/get can ask too', async () => {
    kit = await sdk.connect(
      () => {
        const server = tether(sdk.createServer(), [mrtr()]);
        server.registerPrompt('brainstorm', {}, (async () => {
          const v = readInput(topic);
          if (!v) return requireInput.elicit('What about?', topic);
          return { messages: [{ role: 'user', content: { type: 'text', text: `Ideas about ${v.topic}` } }] };
        }) as any);
        return server;
      },
      { elicit: [{ action: 'accept', content: { topic: 'tea' } }] },
    );
    const r = await kit.client.getPrompt({ name: 'brainstorm' });
    expect((r.messages[0]!.content as any).text).toBe('Ideas about tea');
    expect(kit.elicitations).toHaveLength(1);
  });

  it('a refusal there is a JSON-RPC error (2025: data.code ELICITATION_UNSUPPORTED; 2026-07-28: -32021)', async () => {
    kit = await sdk.connect(
      () => {
        const server = tether(sdk.createServer(), [mrtr()]);
        server.registerPrompt('brainstorm', {}, (async () => requireInput.elicit('What about?', topic)) as any);
        return server;
      },
      { capabilities: {} },
    );
    const err = await kit.client.getPrompt({ name: 'brainstorm' }).then(
      () => undefined,
      (e: any) => e,
    );
    if (sdk.era === 'legacy') {
      expect(err?.code).toBe(-32603);
      expect(err?.data).toMatchObject({ code: ErrorCode.ELICITATION_UNSUPPORTED });
    } else {
      expect(err?.code).toBe(-32021);
      expect(err?.data).toMatchObject({ requiredCapabilities: { elicitation: { form: {} } } });
    }
  });
});

// 2025 era only: these are about a server→client request in flight (its timeout, the client's error
// answer, cancelling the call under it). On 2026-07-28 the server sends no request and holds
// nothing while the user answers: the handler has returned and the client drives the retry.
describeEachSdk(
  'mrtr: a pending elicitation on a 2025-era session',
  (sdk) => {
    it('no answer within timeoutMs: a TIMEOUT refusal, and the client is told to withdraw the elicitation', async () => {
      kit = await sdk.connect(refundFactory(sdk, undefined, { timeoutMs: 300 }), {
        elicit: (_p, { signal }) =>
          new Promise((resolve) => signal.addEventListener('abort', () => resolve({ action: 'cancel' }))),
      });
      const r = await kit.callTool('billing.refund', { id: 'slow' });
      expect(refusalCode(r)).toBe(ErrorCode.TIMEOUT);
      const id = kit.wire.serverRequests('elicitation/create')[0]!.message.id;
      await kit.wire.waitFor(
        (m) => m.message.method === 'notifications/cancelled' && m.message.params?.requestId === id,
        2_000,
      );
      for (let i = 0; i < 100 && !kit.elicitations[0]?.signal.aborted; i++) await sleep(10);
      expect(kit.elicitations[0]!.signal.aborted).toBe(true);
    });

    it('a client that answers the elicitation with a JSON-RPC error: ELICITATION_UNSUPPORTED', async () => {
      kit = await sdk.connect(refundFactory(sdk), {
        elicit: () => {
          throw new Error('no UI available');
        },
      });
      const r = await kit.callTool('billing.refund', { id: 'x' });
      expect(refusalCode(r)).toBe(ErrorCode.ELICITATION_UNSUPPORTED);
      expect(text(r)).toMatch(/no UI available/);
    });

    it('cancelling the call while its elicitation is pending withdraws it; the finally ran; no response', async () => {
      const counts = counts0();
      kit = await sdk.connect(refundFactory(sdk, counts), {
        elicit: (_p, { signal }) =>
          new Promise((resolve) => signal.addEventListener('abort', () => resolve({ action: 'cancel' }))),
      });
      const call = kit.start('billing.refund', { id: 'inv-c' }, { id: 'call-1' });
      const asked = await kit.wire.waitFor((m) => m.message.method === 'elicitation/create', 5_000);
      await call.cancel('user pressed stop');
      // the SDK sends notifications/cancelled for the elicitation (bound to the call's signal)
      await kit.wire.waitFor(
        (m) =>
          m.direction === 'server->client' &&
          m.message.method === 'notifications/cancelled' &&
          m.message.params?.requestId === asked.message.id,
        2_000,
      );
      for (let i = 0; i < 100 && !kit.elicitations[0]?.signal.aborted; i++) await sleep(10);
      expect(kit.elicitations[0]!.signal.aborted).toBe(true);
      await sleep(100);
      expect(kit.wire.responseTo('call-1')).toBeUndefined();
      // the handler returned its ask (its finally ran) and was not entered again
      expect({ body: counts.body, finally: counts.finally, refunded: counts.refunded }).toEqual({
        body: 1,
        finally: 1,
        refunded: 0,
      });
      await kit.ping(); // the server is fine
    });
  },
  { eras: ['legacy'] },
);
