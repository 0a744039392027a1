/** Field descriptors: the schemas they produce, the types they infer, the answers they accept. */
import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  ask,
  checkResponse,
  contentValidator,
  defaultKey,
  requestedSchema,
  requireInput,
  type Infer,
} from '../src/index.js';

describe('schemas', () => {
  it('each kind produces its PrimitiveSchemaDefinition', () => {
    expect(ask.string('Name').title('Your name').minLength(1).maxLength(40).format('email').toSchema()).toEqual({
      type: 'string',
      description: 'Name',
      title: 'Your name',
      minLength: 1,
      maxLength: 40,
      format: 'email',
    });
    expect(ask.number('Amount').min(0.01).max(500).default(10).toSchema()).toEqual({
      type: 'number',
      description: 'Amount',
      minimum: 0.01,
      maximum: 500,
      default: 10,
    });
    expect(ask.integer().toSchema()).toEqual({ type: 'integer' });
    expect(ask.boolean('OK?').default(false).toSchema()).toEqual({
      type: 'boolean',
      description: 'OK?',
      default: false,
    });
    expect(ask.enum(['a', 'b']).toSchema()).toEqual({ type: 'string', enum: ['a', 'b'] });
    expect(ask.enum({ a: 'Alpha', b: 'Beta' }).default('b').toSchema()).toEqual({
      type: 'string',
      oneOf: [
        { const: 'a', title: 'Alpha' },
        { const: 'b', title: 'Beta' },
      ],
      default: 'b',
    });
    expect(ask.enum(['a', 'b']).multiple().default(['a']).toSchema()).toEqual({
      type: 'array',
      items: { type: 'string', enum: ['a', 'b'] },
      default: ['a'],
    });
  });

  it('required lists fields that are neither optional nor defaulted, in order', () => {
    expect(
      requestedSchema({ a: ask.string(), b: ask.string().optional(), c: ask.number().default(1), d: ask.boolean() }),
    ).toEqual({
      type: 'object',
      properties: {
        a: { type: 'string' },
        b: { type: 'string' },
        c: { type: 'number', default: 1 },
        d: { type: 'boolean' },
      },
      required: ['a', 'd'],
    });
  });

  it('builders are immutable', () => {
    const base = ask.number('n');
    const bounded = base.min(1).max(2);
    expect(base.toSchema()).toEqual({ type: 'number', description: 'n' });
    expect(bounded.toSchema()).toEqual({ type: 'number', description: 'n', minimum: 1, maximum: 2 });
    expect(Object.isFrozen(bounded)).toBe(true);
  });

  it('bad definitions fail loudly when built', () => {
    expect(() => ask.enum([])).toThrow(TypeError);
    expect(() => ask.enum(['a', 'a'])).toThrow(/distinct/);
    expect(() => ask.enum(['a']).default('b' as 'a')).toThrow(/not one of/);
    expect(() => ask.number().min(Number.NaN)).toThrow(TypeError);
    expect(() => ask.enum(['a']).legacy()).toThrow(/titled/);
    expect(() => requestedSchema({ a: 'nope' } as never)).toThrow(/descriptor/);
    // a default that breaks its own bounds is caught when the form is asked
    expect(() => requireInput.elicit('x', { n: ask.number().default(0).min(1) })).toThrow(/default/);
    expect(() => requireInput.url('x', 'not a url')).toThrow(/absolute URL/);
    expect(() => requireInput.elicit('x', {})).toThrow(/options.key/);
  });

  it('keys: field names joined with +, or options.key; url defaults to "url"', () => {
    expect(defaultKey({ amount: ask.number(), reason: ask.string() })).toBe('amount+reason');
    expect(Object.keys(requireInput.elicit('m', { confirm: ask.boolean() }).inputRequests!)).toEqual(['confirm']);
    expect(Object.keys(requireInput.elicit('m', {}, { key: 'ok' }).inputRequests!)).toEqual(['ok']);
    expect(Object.keys(requireInput.url('m', 'https://x.example').inputRequests!)).toEqual(['url']);
    expect(requireInput.elicit('m', { a: ask.boolean() }, { state: { s: 1 } }).requestState).toEqual({ s: 1 });
  });
});

describe('types', () => {
  it('answers are inferred from the fields', () => {
    const form = {
      name: ask.string(),
      age: ask.integer().optional(),
      score: ask.number().default(1),
      ok: ask.boolean(),
      color: ask.enum(['red', 'green']),
      size: ask.enum({ s: 'Small', m: 'Medium' }).optional(),
      tags: ask.enum(['x', 'y']).multiple(),
    };
    expectTypeOf<Infer<typeof form>>().toEqualTypeOf<{
      name: string;
      score: number;
      ok: boolean;
      color: 'red' | 'green';
      tags: Array<'x' | 'y'>;
      age?: number;
      size?: 's' | 'm';
    }>();
  });
});

describe('validation', () => {
  const form = {
    name: ask.string().minLength(2).maxLength(5),
    n: ask.integer().min(1).max(9),
    ok: ask.boolean().default(true),
    color: ask.enum({ r: 'Red', g: 'Green' }),
    tags: ask.enum(['x', 'y', 'z']).multiple({ min: 1, max: 2 }).optional(),
    mail: ask.string().format('email').optional(),
  };
  const schema = requestedSchema(form);
  const request = {
    method: 'elicitation/create' as const,
    params: { mode: 'form', message: 'm', requestedSchema: schema },
  };

  it('valid answers pass, defaults fill in, unknown fields are dropped (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 2, maxLength: 5 }),
        fc.integer({ min: 1, max: 9 }),
        fc.option(fc.boolean(), { nil: undefined }),
        fc.constantFrom('r', 'g'),
        fc.option(fc.uniqueArray(fc.constantFrom('x', 'y', 'z'), { minLength: 1, maxLength: 2 }), { nil: undefined }),
        (name, n, ok, color, tags) => {
          const content: Record<string, unknown> = { name, n, color, junk: 1 };
          if (ok !== undefined) content.ok = ok;
          if (tags !== undefined) content.tags = tags;
          const r = checkResponse({ action: 'accept', content }, request);
          expect(r.ok).toBe(true);
          const got = (r as unknown as { answer: { content: Record<string, unknown> } }).answer.content;
          expect(got.ok).toBe(ok ?? true);
          expect(got).not.toHaveProperty('junk');
        },
      ),
    );
  });

  it('each broken answer is invalid, not malformed (asked again)', () => {
    const good = { name: 'abc', n: 3, color: 'r' };
    for (const bad of [
      { ...good, name: 'a' },
      { ...good, name: 'abcdef' },
      { ...good, n: 1.5 },
      { ...good, n: 10 },
      { ...good, n: '3' },
      { ...good, color: 'Red' },
      { ...good, tags: [] },
      { ...good, tags: ['x', 'y', 'z'] },
      { ...good, tags: ['x', 'x'] },
      { ...good, tags: ['q'] },
      { ...good, mail: 'nope' },
      { ...good, ok: 'yes' },
      { name: 'abc', n: 3 },
    ]) {
      const r = checkResponse({ action: 'accept', content: bad }, request);
      expect(r, JSON.stringify(bad)).toMatchObject({ ok: false, malformed: false });
    }
  });

  it('decline and cancel drop content; garbage is malformed', () => {
    expect(checkResponse({ action: 'decline', content: { name: 'zz' } }, request)).toEqual({
      ok: true,
      answer: { action: 'decline' },
    });
    expect(checkResponse({ action: 'cancel' }, request)).toEqual({ ok: true, answer: { action: 'cancel' } });
    for (const raw of [null, 1, 'accept', [], {}, { action: 'ok' }, { action: 'accept', content: [1] }]) {
      expect(checkResponse(raw, request)).toMatchObject({ ok: false, malformed: true });
    }
  });

  it('formats: email, uri, date, date-time', () => {
    const v = (format: 'email' | 'uri' | 'date' | 'date-time', value: string) =>
      contentValidator(requestedSchema({ f: ask.string().format(format) })).safeParse({ f: value }).success;
    expect([v('email', 'a@b.co'), v('email', 'ab')]).toEqual([true, false]);
    expect([v('uri', 'https://x.example/a'), v('uri', 'x')]).toEqual([true, false]);
    expect([v('date', '2026-07-28'), v('date', '28/07/2026')]).toEqual([true, false]);
    expect([
      v('date-time', '2026-07-28T10:00:00Z'),
      v('date-time', '2026-07-28T10:00:00+02:00'),
      v('date-time', 'now'),
    ]).toEqual([true, true, false]);
    expect(
      contentValidator(requestedSchema({ f: ask.string().format('email').maxLength(6) })).safeParse({ f: 'a@b.com' })
        .success,
    ).toBe(false);
  });
});
