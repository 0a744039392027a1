/**
 * 2026-07-28 only, on the wire: a v2 client pinned to 2026-07-28 through `createMcpHandler` in
 * process, a fresh server and a fresh `mrtr()` per HTTP request. What only this era has: the sealed
 * `requestState` crossing the client, raw retries a client could forge, the v2 client's manual mode.
 * (The behaviours shared with 2025-era sessions run on every target in ./wire.test.ts.)
 */
import { handler, refusalCode, tether } from '@mcp-tether/core';
import { describeEachSdk } from '@mcp-tether/testing/matrix';
import { connectV2, type ConnectV2Options, type V2TestClient } from '@mcp-tether/testing/v2';
import { McpServer } from '@modelcontextprotocol/server';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ask,
  MemoryReplayStore,
  mrtr,
  readInputResult,
  readRequestState,
  requireInput,
  type MrtrOptions,
} from '../src/index.js';

const KEY_OLD = 'old-key-old-key-old-key-old-key-';
const KEY_NEW = 'new-key-new-key-new-key-new-key-';
const FORM = { elicitation: { form: {} } };
const approval = { confirm: ask.boolean('Approve the refund') };
const yes = { confirm: { action: 'accept', content: { confirm: true } } };
/** Only the 2026-07-28 target (still filtered by TETHER_SDK). */
const MODERN = { only: ['v2-modern'] as const };
const text = (r: any): string => r.content?.[0]?.text;

const kits: V2TestClient[] = [];
afterEach(async () => {
  for (const k of kits.splice(0)) await k.close();
});

type Counts = { body: number; mrtrs: number };

/**
 * The refund tool behind `createMcpHandler`: every request builds a new server and a new `mrtr()`
 * from `options()` (read per request, so a test can rotate keys or move the clock between requests).
 */
function refundFactory(counts: Counts, options: () => MrtrOptions = () => ({ keys: [KEY_NEW] })) {
  return () => {
    counts.mrtrs++;
    const server = tether(new McpServer({ name: 'billing', version: '1.0.0' }), [mrtr(options())]);
    const refund = handler(async (args: { id: string; amount?: number }) => {
      counts.body++;
      const answer = readInputResult(approval);
      if (!answer) return requireInput.elicit(`Refund ${args.id}?`, approval, { state: { invoice: args.id } });
      if (answer.action !== 'accept' || !answer.content.confirm)
        return { content: [{ type: 'text' as const, text: `not refunded (${answer.action})` }] };
      return {
        content: [{ type: 'text' as const, text: `refunded ${readRequestState<{ invoice: string }>()?.invoice}` }],
      };
    });
    server.registerTool('billing.refund', { inputSchema: { id: z.string(), amount: z.number().optional() } }, refund);
    server.registerTool('billing.delete', { inputSchema: { id: z.string(), amount: z.number().optional() } }, refund);
    server.registerTool(
      'big-state',
      { inputSchema: {} },
      handler(async () => requireInput.elicit('x', approval, { state: 'z'.repeat(70_000) })),
    );
    return server;
  };
}

async function open(factory: () => McpServer, options: ConnectV2Options = {}): Promise<V2TestClient> {
  const kit = await connectV2(factory, { era: 'modern', capabilities: FORM, ...options });
  kits.push(kit);
  return kit;
}

let rawIds = 0;
/** One raw `tools/call` POST (what any client, or an attacker, can send); resolves with the JSON-RPC response. */
async function call(
  kit: V2TestClient,
  params: Record<string, unknown>,
): Promise<{ result?: any; error?: { code: number; message: string; data?: any } }> {
  const id = `raw-${++rawIds}`;
  await kit.sendRaw({ jsonrpc: '2.0', id, method: 'tools/call', params });
  const m = await kit.wire.waitFor(
    (w) => w.direction === 'server->client' && w.message.id === id && w.message.method === undefined,
    5_000,
  );
  return m.message as never;
}

const refundParams = { name: 'billing.refund', arguments: { id: 'inv-1', amount: 5 } };

describeEachSdk(
  'mrtr on 2026-07-28: no server state between the requests of a round trip',
  () => {
    it('round 1 on one handler, the retry on another (another "process" sharing the key ring): the refund completes', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const a = await open(refundFactory(counts));
      const b = await open(refundFactory(counts));
      const first = await call(a, refundParams);
      expect(first.result.resultType).toBe('input_required');
      const done = await call(b, { ...refundParams, requestState: first.result.requestState, inputResponses: yes });
      expect(done.result).toMatchObject({
        resultType: 'complete',
        content: [{ type: 'text', text: 'refunded inv-1' }],
      });
      expect(counts.body).toBe(2);
      // each request met a different handler, server and middleware instance
      expect(a.servers).toHaveLength(2); // server/discover + the first call
      expect(b.servers).toHaveLength(2); // server/discover + the retry
      expect(counts.mrtrs).toBe(4);
    });

    it('arguments nested 2 200 levels deep: a clear -32602 (not a stack overflow), and the next call is served', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const kit = await open(refundFactory(counts));
      let deep: unknown = 'bottom';
      for (let i = 0; i < 2_200; i++) deep = { a: deep };
      const refused = await call(kit, { name: 'billing.refund', arguments: { id: 'inv-9', deep } });
      expect(refused.error?.code).toBe(-32602);
      expect(refused.error?.message).toMatch(/nested deeper than 1000 levels/);
      expect(refused.error?.message).not.toMatch(/call stack/);
      expect(counts.body).toBe(0);
      const next = await call(kit, refundParams);
      expect(next.result.resultType).toBe('input_required');
      expect(counts.body).toBe(1);
    });

    it('without configured keys, the per-process key still serves a fresh mrtr() per request', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const kit = await open(
        refundFactory(counts, () => ({})),
        { elicit: [{ action: 'accept', content: { confirm: true } }] },
      );
      expect(text(await kit.callTool('billing.refund', { id: 'inv-2' }))).toBe('refunded inv-2');
      expect(counts.mrtrs).toBe(3);
    });

    it('key rotation: a state sealed with a rotated-out but kept key is accepted; once the key is dropped it is not', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      let ring = [KEY_OLD];
      const kit = await open(refundFactory(counts, () => ({ keys: ring })));
      const state = (await call(kit, refundParams)).result.requestState;
      ring = [KEY_NEW, KEY_OLD]; // rolling deploy: the new key first, the old one kept
      expect(text((await call(kit, { ...refundParams, requestState: state, inputResponses: yes })).result)).toBe(
        'refunded inv-1',
      );
      ring = [KEY_NEW];
      const err = (await call(kit, { ...refundParams, requestState: state, inputResponses: yes })).error;
      expect(err).toMatchObject({ code: -32602, data: { reason: 'signature' } });
    });
  },
  MODERN,
);

describeEachSdk(
  'mrtr on 2026-07-28: missing or wrong keys are asked again',
  () => {
    it('no response, a wrong key, responses without a state: a new input_required; the right key (plus extras) completes', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const kit = await open(refundFactory(counts));
      const first = (await call(kit, refundParams)).result;
      const asked = first.inputRequests;

      const none = (await call(kit, { ...refundParams, requestState: first.requestState })).result;
      expect(none.resultType).toBe('input_required');
      expect(none.inputRequests).toEqual(asked);

      const wrong = (
        await call(kit, {
          ...refundParams,
          requestState: none.requestState,
          inputResponses: { wrong_key: yes.confirm },
        })
      ).result;
      expect(wrong.resultType).toBe('input_required');
      expect(wrong.inputRequests).toEqual(asked);
      // the round count travels in the state: this is round 3
      expect(JSON.parse(Buffer.from(wrong.requestState.split('.')[1], 'base64url').toString()).p.r).toBe(3);

      // answers without a state: nothing was asked, so they are ignored (a first round)
      const fresh = (await call(kit, { ...refundParams, inputResponses: yes })).result;
      expect(fresh.resultType).toBe('input_required');

      const done = (
        await call(kit, {
          ...refundParams,
          requestState: wrong.requestState,
          inputResponses: {
            confirm: { action: 'accept', content: { confirm: true, extra: 1 } },
            other: { action: 'decline' },
          },
        })
      ).result;
      expect(text(done)).toBe('refunded inv-1');
      expect(counts.body).toBe(5);
    });

    it('malformed responses: an entry with no valid action or non-object content is -32602 and the handler does not run; non-object entries are dropped by the SDK and asked again', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const kit = await open(refundFactory(counts));
      const state = (await call(kit, refundParams)).result.requestState;
      counts.body = 0;
      for (const inputResponses of [
        { confirm: { action: 'maybe' } },
        { confirm: { action: 'accept', content: 'yes' } },
      ]) {
        expect((await call(kit, { ...refundParams, requestState: state, inputResponses })).error?.code).toBe(-32602);
      }
      expect(counts.body).toBe(0);
      // the v2 SDK keeps only plain-object entries (partitionInputResponses): these reach mrtr as missing answers
      for (const inputResponses of [null, 'x', [1], { confirm: 12345 }]) {
        expect((await call(kit, { ...refundParams, requestState: state, inputResponses })).result.resultType).toBe(
          'input_required',
        );
      }
      // content failing validation: not shown to the handler, asked again
      const invalid = (
        await call(kit, {
          ...refundParams,
          requestState: state,
          inputResponses: { confirm: { action: 'accept', content: { confirm: 'yes' } } },
        })
      ).result;
      expect(invalid.resultType).toBe('input_required');
    });
  },
  MODERN,
);

describeEachSdk(
  'mrtr on 2026-07-28: the sealed requestState',
  () => {
    async function rejected(kit: V2TestClient, counts: Counts, params: Record<string, unknown>): Promise<string> {
      const before = counts.body;
      const r = await call(kit, { ...refundParams, inputResponses: yes, ...params });
      expect(r.result).toBeUndefined();
      expect(r.error?.code).toBe(-32602);
      expect(counts.body).toBe(before); // never reaches the handler
      return r.error!.data?.reason;
    }

    it('a flipped byte, a -TAMPERED suffix, another tool, other arguments, 1 MiB, a non-string: each -32602, the handler never runs', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const kit = await open(refundFactory(counts));
      const state: string = (await call(kit, refundParams)).result.requestState;
      const i = state.indexOf('.') + 10;
      const flipped = state.slice(0, i) + (state[i] === 'A' ? 'B' : 'A') + state.slice(i + 1);
      expect(await rejected(kit, counts, { requestState: flipped })).toBe('signature');
      expect(await rejected(kit, counts, { requestState: `${state}-TAMPERED` })).toMatch(/^(malformed|signature)$/);
      expect(await rejected(kit, counts, { name: 'billing.delete', requestState: state })).toBe('binding');
      expect(await rejected(kit, counts, { arguments: { id: 'inv-2', amount: 5 }, requestState: state })).toBe(
        'binding',
      );
      expect(await rejected(kit, counts, { arguments: { id: 'inv-1', amount: 500 }, requestState: state })).toBe(
        'binding',
      );
      expect(await rejected(kit, counts, { requestState: `v1.${'A'.repeat(1024 * 1024)}.x` })).toBe('size');
      // a non-string state is refused by the v2 SDK itself, before any handler
      expect(await rejected(kit, counts, { requestState: 42 })).toBe('invalid_request_state');
      // the same state, untouched, is accepted (arguments in another key order)
      const ok = await call(kit, {
        ...refundParams,
        arguments: { amount: 5, id: 'inv-1' },
        requestState: state,
        inputResponses: yes,
      });
      expect(text(ok.result)).toBe('refunded inv-1');
    });

    it('an expired state is rejected', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      let now = 1_700_000_000_000;
      const kit = await open(refundFactory(counts, () => ({ keys: [KEY_NEW], ttlMs: 60_000, now: () => now })));
      const state = (await call(kit, refundParams)).result.requestState;
      now += 59_000;
      expect(text((await call(kit, { ...refundParams, requestState: state, inputResponses: yes })).result)).toBe(
        'refunded inv-1',
      );
      now += 1_001;
      expect(await rejected(kit, counts, { requestState: state })).toBe('expired');
    });

    it('a state sealed for one principal (OAuth client id) is rejected for another', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const token = (clientId: string) => ({
        token: `t-${clientId}`,
        clientId,
        scopes: [],
        expiresAt: Math.floor(Date.now() / 1000) + 600,
      });
      const alice = await open(refundFactory(counts), { authInfo: token('alice') });
      const mallory = await open(refundFactory(counts), { authInfo: token('mallory') });
      const state = (await call(alice, refundParams)).result.requestState;
      expect(await rejected(mallory, counts, { requestState: state })).toBe('binding');
      expect(text((await call(alice, { ...refundParams, requestState: state, inputResponses: yes })).result)).toBe(
        'refunded inv-1',
      );
    });

    it('oneTime: a captured state replayed by another client with its own answer is -32602 (replayed) and the refund runs once; off, it ran twice', async () => {
      for (const oneTime of [new MemoryReplayStore(), false] as const) {
        const counts: Counts = { body: 0, mrtrs: 0 };
        const refunds: string[] = [];
        const shared = { keys: [KEY_NEW], oneTime };
        const factory = refundFactory(counts, () => shared);
        const alice = await open(factory);
        const eve = await open(factory);
        const state = (await call(alice, refundParams)).result.requestState;
        const first = await call(alice, { ...refundParams, requestState: state, inputResponses: yes });
        if (text(first.result) === 'refunded inv-1') refunds.push('alice');
        const replay = await call(eve, { ...refundParams, requestState: state, inputResponses: yes });
        if (replay.result && text(replay.result) === 'refunded inv-1') refunds.push('eve');
        if (oneTime) {
          expect(replay.error).toMatchObject({ code: -32602, data: { reason: 'replayed' } });
          expect(refunds).toEqual(['alice']);
          expect(counts.body).toBe(2); // round 1 and alice's retry; the replay never reached the handler
          expect(oneTime.size).toBe(1);
        } else expect(refunds).toEqual(['alice', 'eve']);
      }
    });

    it("oneTime: a retry refused for malformed answers does not use the state up; each round's state is good once; an unavailable store fails the call", async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const store = new MemoryReplayStore();
      const kit = await open(refundFactory(counts, () => ({ keys: [KEY_NEW], oneTime: store })));
      const state = (await call(kit, refundParams)).result.requestState;
      const bad = await call(kit, {
        ...refundParams,
        requestState: state,
        inputResponses: { confirm: { action: 'maybe' } },
      });
      expect(bad.error?.code).toBe(-32602);
      const again = await call(kit, { ...refundParams, requestState: state, inputResponses: {} });
      expect(again.result.resultType).toBe('input_required'); // no answer: asked again with a new state
      expect(again.result.requestState).not.toBe(state);
      expect(
        text(
          (await call(kit, { ...refundParams, requestState: again.result.requestState, inputResponses: yes })).result,
        ),
      ).toBe('refunded inv-1');
      expect((await call(kit, { ...refundParams, requestState: state, inputResponses: yes })).error).toMatchObject({
        code: -32602,
        data: { reason: 'replayed' },
      });

      const down = await open(
        refundFactory(counts, () => ({
          keys: [KEY_NEW],
          oneTime: {
            consume: async () => {
              throw new Error('connection refused');
            },
          },
        })),
      );
      const s2 = (await call(down, refundParams)).result.requestState;
      const failed = await call(down, { ...refundParams, requestState: s2, inputResponses: yes });
      expect(failed.error).toMatchObject({
        code: -32603,
        message: expect.stringMatching(/replay store is unavailable: connection refused/),
      });
    });

    it("MRTR_KEYS: replicas configured with the same keys by environment open each other's states", async () => {
      const before = process.env.MRTR_KEYS;
      process.env.MRTR_KEYS = ` ${KEY_NEW} , ${KEY_OLD} `;
      try {
        const counts: Counts = { body: 0, mrtrs: 0 };
        const a = await open(refundFactory(counts, () => ({})));
        const b = await open(refundFactory(counts, () => ({ keys: [KEY_NEW] })));
        const state = (await call(a, refundParams)).result.requestState;
        expect(text((await call(b, { ...refundParams, requestState: state, inputResponses: yes })).result)).toBe(
          'refunded inv-1',
        );
        process.env.MRTR_KEYS = 'short';
        expect(() => mrtr()).toThrow(/MRTR_KEYS key #0 has 5 bytes/);
      } finally {
        if (before === undefined) delete process.env.MRTR_KEYS;
        else process.env.MRTR_KEYS = before;
      }
    });

    it('a handler state too large to seal fails the call with a JSON-RPC internal error (the cap is 64 KiB by default)', async () => {
      const kit = await open(refundFactory({ body: 0, mrtrs: 0 }));
      const r = await call(kit, { name: 'big-state', arguments: {} });
      expect(r.error?.code).toBe(-32603);
      expect(JSON.stringify(kit.wire.fromServer())).not.toContain('zzzzzzzz');
    });
  },
  MODERN,
);

describeEachSdk(
  'mrtr on 2026-07-28: the v2 client, auto-fulfil and manual mode',
  () => {
    it('autoFulfill (default): callTool returns the complete result; the rounds happen inside the call', async () => {
      const kit = await open(refundFactory({ body: 0, mrtrs: 0 }), {
        elicit: [{ action: 'accept', content: { confirm: true } }],
      });
      expect(text(await kit.callTool('billing.refund', { id: 'inv-3' }))).toBe('refunded inv-3');
      expect(kit.wire.fromClient().filter((m) => m.message.method === 'tools/call')).toHaveLength(2);
    });

    it('manual (autoFulfill: false): input_required is an error unless allowed; with allowInputRequired the caller retries itself', async () => {
      const counts: Counts = { body: 0, mrtrs: 0 };
      const kit = await open(refundFactory(counts), { inputRequired: { autoFulfill: false } });
      await expect(kit.callTool('billing.refund', { id: 'inv-4' })).rejects.toMatchObject({
        code: 'UNSUPPORTED_RESULT_TYPE',
      });
      const params = { name: 'billing.refund', arguments: { id: 'inv-4' } };
      const request = (p: Record<string, unknown>) =>
        kit.client.request(
          { method: 'tools/call', params: p } as never,
          { allowInputRequired: true } as never,
        ) as Promise<any>;
      const first = await request(params);
      expect(first.resultType).toBe('input_required');
      expect(Object.keys(first.inputRequests)).toEqual(['confirm']);
      const done = await request({ ...params, requestState: first.requestState, inputResponses: yes });
      expect(text(done)).toBe('refunded inv-4');
      expect(kit.elicitations).toHaveLength(0); // the caller answered, not the client's handler
    });

    it("the client's own round cap (maxRounds) below the server's ends the call on the client", async () => {
      const kit = await open(refundFactory({ body: 0, mrtrs: 0 }), {
        inputRequired: { maxRounds: 2 },
        elicit: [{ action: 'accept', content: { confirm: 'yes' } as never }],
      });
      await expect(kit.callTool('billing.refund', { id: 'inv-5' })).rejects.toMatchObject({
        code: 'INPUT_REQUIRED_ROUNDS_EXCEEDED',
      });
    });

    it('a complete result passes through untouched (plus resultType)', async () => {
      const kit = await open(() => {
        const server = tether(new McpServer({ name: 't', version: '1' }), [mrtr()]);
        server.registerTool(
          't',
          { inputSchema: {} },
          handler(async () => ({ content: [{ type: 'text' as const, text: 'hi' }], structuredContent: { n: 1 } })),
        );
        return server;
      });
      const r = await call(kit, { name: 't', arguments: {} });
      expect(r.result).toMatchObject({
        resultType: 'complete',
        content: [{ type: 'text', text: 'hi' }],
        structuredContent: { n: 1 },
      });
      expect(refusalCode(r.result)).toBeUndefined();
    });
  },
  MODERN,
);
