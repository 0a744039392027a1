/** The sealer, directly: round trips, tampering, expiry, binding, size, key rotation. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '@mcp-tether/core';
import {
  canonicalJson,
  createStateSealer,
  MAX_CANONICAL_DEPTH,
  open,
  requestBinding,
  seal,
  StateRejectedError,
  type StateRejection,
} from '../src/index.js';

const KEY_A = 'a'.repeat(32);
const KEY_B = Buffer.alloc(48, 7);
/** `principal: null` means none. */
const bind = (name = 'billing.refund', args: unknown = { id: 'inv-1' }, principal: string | null = 'client-1') =>
  requestBinding({ method: 'tools/call', name, args, principal: principal ?? undefined });

function rejection(fn: () => unknown): StateRejection | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof StateRejectedError) {
      expect(err.code).toBe(-32602);
      expect(err.data).toEqual({ reason: err.reason });
      return err.reason;
    }
    throw err;
  }
  return undefined;
}

describe('createStateSealer', () => {
  it('round-trips any JSON value (property)', () => {
    const sealer = createStateSealer({ keys: [KEY_A] });
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.string(), (value, b) => {
        const token = sealer.seal(value, b);
        expect(token).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
        // JSON normalizes -0 to 0
        expect(sealer.open(token, b)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 200 },
    );
  });

  it('any single changed character is rejected (property)', () => {
    const sealer = createStateSealer({ keys: [KEY_A] });
    const b = bind();
    const token = sealer.seal(
      { step: 2, invoice: 'inv-1', answers: { confirm: { action: 'accept', content: { confirm: true } } } },
      b,
    );
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ';
    fc.assert(
      fc.property(fc.nat({ max: token.length - 1 }), fc.constantFrom(...alphabet), (i, c) => {
        fc.pre(token[i] !== c);
        const tampered = token.slice(0, i) + c + token.slice(i + 1);
        expect(rejection(() => sealer.open(tampered, b))).toBeDefined();
      }),
      { numRuns: 500 },
    );
  });

  it('a flipped byte in the payload is a signature failure', () => {
    const sealer = createStateSealer({ keys: [KEY_A] });
    const token = sealer.seal({ amountCents: 1250 }, bind());
    const [v, p, m] = token.split('.') as [string, string, string];
    const bytes = Buffer.from(p, 'base64url');
    bytes[5]! ^= 0x01;
    expect(rejection(() => sealer.open(`${v}.${bytes.toString('base64url')}.${m}`, bind()))).toBe('signature');
  });

  it('expires after ttlMs', () => {
    let now = 1_000_000;
    const sealer = createStateSealer({ keys: [KEY_A], ttlMs: 60_000, now: () => now });
    const token = sealer.seal('x', bind());
    now += 60_000;
    expect(sealer.open(token, bind())).toBe('x');
    now += 1;
    expect(rejection(() => sealer.open(token, bind()))).toBe('expired');
  });

  it('is bound to the tool, the arguments and the principal', () => {
    const sealer = createStateSealer({ keys: [KEY_A] });
    const token = sealer.seal({ ok: 1 }, bind('billing.refund', { id: 'inv-1', amount: 5 }, 'client-1'));
    // argument key order does not matter
    expect(sealer.open(token, bind('billing.refund', { amount: 5, id: 'inv-1' }, 'client-1'))).toEqual({ ok: 1 });
    expect(rejection(() => sealer.open(token, bind('billing.delete', { id: 'inv-1', amount: 5 }, 'client-1')))).toBe(
      'binding',
    );
    expect(rejection(() => sealer.open(token, bind('billing.refund', { id: 'inv-2', amount: 5 }, 'client-1')))).toBe(
      'binding',
    );
    expect(rejection(() => sealer.open(token, bind('billing.refund', { id: 'inv-1', amount: 5 }, 'client-2')))).toBe(
      'binding',
    );
    expect(rejection(() => sealer.open(token, bind('billing.refund', { id: 'inv-1', amount: 5 }, null)))).toBe(
      'binding',
    );
  });

  it('a 1 MiB state is refused by size before anything else; sealing over the cap throws', () => {
    const sealer = createStateSealer({ keys: [KEY_A] });
    const big = 'v1.' + 'A'.repeat(1024 * 1024) + '.' + 'B'.repeat(43);
    expect(rejection(() => sealer.open(big, bind()))).toBe('size');
    expect(() => sealer.seal('x'.repeat(70_000), bind())).toThrow(RangeError);
    const small = createStateSealer({ keys: [KEY_A], maxBytes: 200 });
    expect(rejection(() => small.open(sealer.seal('y'.repeat(300), bind()), bind()))).toBe('size');
  });

  it('key rotation: a state sealed with a rotated-out but kept key opens; a dropped key does not', () => {
    const before = createStateSealer({ keys: [KEY_A] });
    const token = before.seal({ step: 1 }, bind());
    const rotated = createStateSealer({ keys: [KEY_B, KEY_A] });
    expect(rotated.open(token, bind())).toEqual({ step: 1 });
    // new states are sealed with the new current key
    expect(before.open.bind(before, rotated.seal({ step: 2 }, bind()), bind())).toThrow(StateRejectedError);
    const dropped = createStateSealer({ keys: [KEY_B] });
    expect(rejection(() => dropped.open(token, bind()))).toBe('signature');
  });

  it('malformed input is rejected, never thrown as anything else', () => {
    const sealer = createStateSealer({ keys: [KEY_A] });
    for (const bad of [
      undefined,
      null,
      42,
      {},
      '',
      'v1',
      'v1..',
      'v2.abc.def',
      'v1.abc',
      'v1.a b.c',
      'v1.abc.def.ghi',
    ]) {
      expect(rejection(() => sealer.open(bad, bind()))).toMatch(/malformed|signature/);
    }
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(rejection(() => sealer.open(s, bind()))).toBeDefined();
      }),
    );
  });

  it('keys must be at least 32 bytes; an empty ring is refused', () => {
    expect(() => createStateSealer({ keys: ['short'] })).toThrow(/at least 32/);
    expect(() => createStateSealer({ keys: [new Uint8Array(31)] })).toThrow(/at least 32/);
    expect(() => createStateSealer({ keys: [] })).toThrow(TypeError);
    expect(() => createStateSealer({ ttlMs: 0 })).toThrow(TypeError);
  });

  it('without keys, every sealer in the process shares one random key', () => {
    const token = createStateSealer().seal({ n: 1 }, 'b');
    expect(createStateSealer().open(token, 'b')).toEqual({ n: 1 });
    // ...which no configured key opens
    expect(rejection(() => createStateSealer({ keys: [KEY_A] }).open(token, 'b'))).toBe('signature');
  });

  it('seal()/open() one-offs', () => {
    const token = seal({ a: 1 }, { keys: [KEY_A], binding: 'x' });
    expect(open(token, { keys: [KEY_A], binding: 'x' })).toEqual({ a: 1 });
    expect(() => open(token, { keys: [KEY_A], binding: 'y' })).toThrow(StateRejectedError);
  });
});

describe('canonicalJson', () => {
  it('is independent of key order (property)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })), (o) => {
        const reversed = Object.fromEntries(Object.entries(o).reverse());
        expect(canonicalJson(reversed)).toBe(canonicalJson(o));
      }),
    );
  });
});

describe('canonicalJson depth bound', () => {
  it('accepts MAX_CANONICAL_DEPTH levels with results unchanged, refuses one more with -32602', () => {
    const nest = (n: number): unknown => {
      let v: unknown = 1;
      for (let i = 0; i < n; i++) v = i % 2 ? [v] : { b: 2, a: v };
      return v;
    };
    const ok = nest(MAX_CANONICAL_DEPTH); // 1 000 nested containers, the root included
    expect(JSON.parse(canonicalJson(ok))).toEqual(ok);
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] })).toBe('{"a":[{"c":2,"d":1}],"b":1}');
    let err: unknown;
    try {
      canonicalJson(nest(MAX_CANONICAL_DEPTH + 1));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe(-32602);
  });
});
