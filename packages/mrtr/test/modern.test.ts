/**
 * The 2026-07-28 path of the middleware. NOT a wire test: there is no modern wire path yet (it comes
 * with the v2 adapter); contexts are built by hand in ./modern-harness.ts the way that adapter will
 * build them.
 */
import { ErrorCode, refusalCode, type CallResult, type OutboundEvent } from '@mcp-tether/core';
import { describe, expect, it } from 'vitest';
import { ask, createStateSealer, mrtr, readInput, readInputResult, readRequestState, requireInput } from '../src/index.js';
import { drive, modernCall, modernError, type Handler } from './modern-harness.js';

const KEY_OLD = 'old-key-old-key-old-key-old-key-';
const KEY_NEW = 'new-key-new-key-new-key-new-key-';
const FORM = { elicitation: { form: {} } };
const approval = { confirm: ask.boolean('Approve the refund') };

function refund(counts = { body: 0 }): Handler {
  return async (args) => {
    counts.body++;
    const answer = readInputResult(approval);
    if (!answer) return requireInput.elicit(`Refund ${String(args.id)}?`, approval, { state: { invoice: args.id } });
    if (answer.action !== 'accept' || !answer.content.confirm) return { content: [{ type: 'text', text: `not refunded (${answer.action})` }] };
    return { content: [{ type: 'text', text: `refunded ${String(readRequestState<{ invoice: string }>()?.invoice)}` }] };
  };
}

describe('2026-07-28: input_required on the wire, the client drives the retry', () => {
  it('round 1 is the wire InputRequiredResult with a sealed requestState; the retry completes', async () => {
    const mw = mrtr({ keys: [KEY_NEW] });
    const events: OutboundEvent[] = [];
    const first = await modernCall(mw, refund(), { name: 'billing.refund', args: { id: 'inv-1' }, capabilities: FORM }, events);
    expect(Object.keys(first).sort()).toEqual(['inputRequests', 'requestState', 'resultType']);
    expect(first.resultType).toBe('input_required');
    expect(first.inputRequests).toEqual({
      confirm: {
        method: 'elicitation/create',
        params: { mode: 'form', message: 'Refund inv-1?', requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean', description: 'Approve the refund' } }, required: ['confirm'] } },
      },
    });
    expect(first.requestState).toMatch(/^v1\.[\w-]+\.[\w-]+$/);
    expect(events).toEqual([{ type: 'input', key: 'confirm', round: 1, request: (first.inputRequests as any).confirm }]);

    const counts = { body: 0 };
    const { result, requests } = await drive(mw, refund(counts), { name: 'billing.refund', args: { id: 'inv-1' }, capabilities: FORM }, () => ({ action: 'accept', content: { confirm: true } }));
    expect(result).toEqual({ content: [{ type: 'text', text: 'refunded inv-1' }] });
    expect(requests).toBe(2);
    expect(counts.body).toBe(2); // once per round
  });

  it('decline and cancel reach the handler', async () => {
    const mw = mrtr({ keys: [KEY_NEW] });
    for (const action of ['decline', 'cancel'] as const) {
      const { result } = await drive(mw, refund(), { name: 'billing.refund', args: { id: 'x' }, capabilities: FORM }, () => ({ action }));
      expect(result).toEqual({ content: [{ type: 'text', text: `not refunded (${action})` }] });
    }
  });

  it('answers accumulate across rounds inside the sealed state; URL mode carries no elicitationId', async () => {
    const mw = mrtr({ keys: [KEY_NEW] });
    const amount = { amount: ask.number('EUR').min(1) };
    const handler: Handler = async () => {
      const a = readInput(amount);
      if (!a) return requireInput.elicit('How much?', amount);
      const consent = readInputResult('bank');
      if (!consent) return requireInput.url('Connect your bank', 'https://bank.example/consent', { key: 'bank' });
      return { content: [{ type: 'text', text: `${a.amount} ${consent.action}` }] };
    };
    const seen: unknown[] = [];
    const { result, requests } = await drive(mw, handler, { name: 'pay', capabilities: { elicitation: { form: {}, url: {} } } }, (key, request) => {
      seen.push(request);
      return key === 'amount' ? { action: 'accept', content: { amount: 12 } } : { action: 'accept' };
    });
    expect(result).toEqual({ content: [{ type: 'text', text: '12 accept' }] });
    expect(requests).toBe(3);
    expect(seen[1]).toEqual({ method: 'elicitation/create', params: { mode: 'url', message: 'Connect your bank', url: 'https://bank.example/consent' } });
  });

  it('a missing or wrong key is asked again with a new input_required; unknown extra keys are ignored', async () => {
    const mw = mrtr({ keys: [KEY_NEW] });
    const req = { name: 'billing.refund', args: { id: 'inv-1' }, capabilities: FORM };
    const first = await modernCall(mw, refund(), req);
    // wrong key only: re-request
    const again = await modernCall(mw, refund(), { ...req, requestState: first.requestState, inputResponses: { wrong_key: { action: 'accept', content: { confirm: true } } } });
    expect(again.resultType).toBe('input_required');
    expect(Object.keys(again.inputRequests as object)).toEqual(['confirm']);
    // first-round call with responses but no state: nothing was asked, so they are ignored
    const fresh = await modernCall(mw, refund(), { ...req, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } });
    expect(fresh.resultType).toBe('input_required');
    // right key plus extras: complete
    const done = await modernCall(mw, refund(), {
      ...req,
      requestState: again.requestState,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true, extra: 1 } }, other: { action: 'decline' } },
    });
    expect(done).toEqual({ content: [{ type: 'text', text: 'refunded inv-1' }] });
  });

  it('invalid content is asked again; after 8 rounds of it, MAX_ROUNDS', async () => {
    const mw = mrtr({ keys: [KEY_NEW] });
    let asked = 0;
    const { result, requests } = await drive(mw, refund(), { name: 'billing.refund', args: { id: 'x' }, capabilities: FORM }, () => {
      asked++;
      return { action: 'accept', content: { confirm: 'yes' } };
    });
    expect(refusalCode(result)).toBe(ErrorCode.MAX_ROUNDS);
    expect(asked).toBe(8);
    expect(requests).toBe(9);
  });

  it('malformed inputResponses are a -32602 error, and the handler does not run', async () => {
    const mw = mrtr({ keys: [KEY_NEW] });
    const req = { name: 'billing.refund', args: { id: 'inv-1' }, capabilities: FORM };
    const first = await modernCall(mw, refund(), req);
    const counts = { body: 0 };
    for (const inputResponses of [null, 'x', [1], { confirm: 12345 }, { confirm: { action: 'maybe' } }, { confirm: { action: 'accept', content: 'yes' } }]) {
      const err = await modernError(modernCall(mw, refund(counts), { ...req, requestState: first.requestState, inputResponses }));
      expect(err.code).toBe(-32602);
    }
    expect(counts.body).toBe(0);
  });
});

describe('2026-07-28: sealed requestState', () => {
  const req = { name: 'billing.refund', args: { id: 'inv-1', amount: 5 }, capabilities: FORM, principal: 'client-1' };
  const yes = { confirm: { action: 'accept', content: { confirm: true } } };

  async function rejected(mw: ReturnType<typeof mrtr>, over: Partial<typeof req> & { requestState: unknown }) {
    const counts = { body: 0 };
    const err = await modernError(modernCall(mw, refund(counts), { ...req, inputResponses: yes, ...over }));
    expect(err.code).toBe(-32602);
    expect(counts.body).toBe(0); // never reaches the handler
    return (err.data as { reason: string }).reason;
  }

  it('a flipped byte, an expired state, another tool, other arguments, another principal, 1 MiB: each rejected with -32602', async () => {
    let now = 1_700_000_000_000;
    const mw = mrtr({ keys: [KEY_NEW], ttlMs: 60_000, now: () => now });
    const state = (await modernCall(mw, refund(), req)).requestState as string;

    const i = state.indexOf('.') + 10;
    const flipped = state.slice(0, i) + (state[i] === 'A' ? 'B' : 'A') + state.slice(i + 1);
    expect(await rejected(mw, { requestState: flipped })).toBe('signature');
    expect(await rejected(mw, { requestState: `${state}-TAMPERED` })).toMatch(/malformed|signature/);
    expect(await rejected(mw, { name: 'billing.delete', requestState: state })).toBe('binding');
    expect(await rejected(mw, { args: { id: 'inv-2', amount: 5 }, requestState: state })).toBe('binding');
    expect(await rejected(mw, { args: { id: 'inv-1', amount: 500 }, requestState: state })).toBe('binding');
    expect(await rejected(mw, { principal: 'client-2', requestState: state })).toBe('binding');
    expect(await rejected(mw, { requestState: 'v1.' + 'A'.repeat(1024 * 1024) + '.x' })).toBe('size');
    expect(await rejected(mw, { requestState: 42 })).toBe('malformed');

    // the same state, untouched and in time, is accepted (arguments in another key order)
    const ok = await modernCall(mw, refund(), { ...req, args: { amount: 5, id: 'inv-1' }, requestState: state, inputResponses: yes });
    expect(ok).toEqual({ content: [{ type: 'text', text: 'refunded inv-1' }] });
    now += 60_001;
    expect(await rejected(mw, { requestState: state })).toBe('expired');
  });

  it('a state sealed with a rotated-out but kept key is accepted; once the key is dropped it is not', async () => {
    const state = (await modernCall(mrtr({ keys: [KEY_OLD] }), refund(), req)).requestState;
    const ok = await modernCall(mrtr({ keys: [KEY_NEW, KEY_OLD] }), refund(), { ...req, requestState: state, inputResponses: yes });
    expect(ok).toEqual({ content: [{ type: 'text', text: 'refunded inv-1' }] });
    expect(await rejected(mrtr({ keys: [KEY_NEW] }), { requestState: state })).toBe('signature');
  });

  it('two server processes sharing keys serve each other\'s retries (stateless HTTP behind a load balancer)', async () => {
    const a = mrtr({ keys: [KEY_NEW] });
    const b = mrtr({ sealer: createStateSealer({ keys: [KEY_NEW] }) });
    const state = (await modernCall(a, refund(), req)).requestState;
    expect(await modernCall(b, refund(), { ...req, requestState: state, inputResponses: yes })).toEqual({ content: [{ type: 'text', text: 'refunded inv-1' }] });
  });

  it('a handler state too large to seal fails the call loudly (the cap is 64 KiB by default)', async () => {
    const mw = mrtr({ keys: [KEY_NEW] });
    const big: Handler = async () => requireInput.elicit('x', approval, { state: 'z'.repeat(70_000) });
    await expect(modernCall(mw, big, req)).rejects.toThrow(/64|65536|cap/);
  });
});

describe('2026-07-28: client capabilities of the request', () => {
  it('no elicitation capability: -32021 with requiredCapabilities, and no elicitation/create goes out', async () => {
    const mw = mrtr({ keys: [KEY_NEW] });
    for (const capabilities of [{}, { sampling: {} }, { elicitation: { url: {} } }]) {
      const err = await modernError(modernCall(mw, refund(), { name: 'billing.refund', args: { id: 'x' }, capabilities }));
      expect(err.code).toBe(-32021);
      expect(err.data).toEqual({ requiredCapabilities: { elicitation: { form: {} } } });
    }
  });

  it('`elicitation: {}` means form', async () => {
    const r = await modernCall(mrtr({ keys: [KEY_NEW] }), refund(), { name: 'billing.refund', args: { id: 'x' }, capabilities: { elicitation: {} } });
    expect(r.resultType).toBe('input_required');
  });

  it('a complete result passes through untouched; a call without state runs as a first round', async () => {
    const plain: Handler = async (): Promise<CallResult> => ({ content: [{ type: 'text', text: 'hi' }], structuredContent: { n: 1 } });
    expect(await modernCall(mrtr(), plain, { name: 't' })).toEqual({ content: [{ type: 'text', text: 'hi' }], structuredContent: { n: 1 } });
  });
});
