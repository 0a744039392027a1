/**
 * @mcp-tether/testing/fuzz — fast-check generators of JSON-RPC traffic that a hardened MCP
 * server must answer per JSON-RPC 2.0, shared by the stdio fuzz (core) and the Streamable HTTP fuzz
 * (`@mcp-tether/http`). Each case is one message as text, with what must come back: a result, or an
 * error with this code, for this id. Needs `fast-check` (an optional peer dependency).
 *
 * The server under test has a `depth` tool whose result text is `depth N`, N the nesting depth of
 * its `value` argument (0 for a scalar). {@link expectAnswer} checks an answer against its case
 * (needs `vitest`).
 */
import fc from 'fast-check';
import { expect } from 'vitest';

/** What a case must get back: a result (containing `text` when given), or an error with this code (or one of these codes, or an `isError` result), for this id. */
export type FuzzExpect = { id: string | number | null; code?: number | readonly number[]; text?: string };
/** One message as text, the cuts to write it in (stdio), and what must come back. */
export type FuzzCase = { line: string; chunks?: number[]; expect: FuzzExpect };

/** Options of {@link fuzzFamilies}. */
export interface FuzzOptions {
  /**
   * The transport's size limit, in bytes, as a stdio line limit counts it: a message of
   * `line.length + 1 > maxLine` bytes (the newline included) must be refused with -32600 and id null.
   */
  maxLine: number;
  /** A method that answers `{}`-like results to any valid id (`ping` on 2025-era; e.g. `tools/list` on 2026-07-28). Default `ping`. */
  pingMethod?: string;
  /**
   * Text inserted first in every object `params` of the generated requests (e.g. a 2026-07-28
   * `"_meta":{...}` envelope, without braces); requests without params get `params: {<it>}`.
   * Default: nothing.
   */
  paramsPrefix?: string;
  /** Prefix of the request ids the families make up. Default `fz`. */
  idPrefix?: string;
}

const isId = (v: unknown): v is string | number =>
  typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));
const isObj = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON-RPC message as a fuzz test receives it (parsed JSON). */
export type FuzzAnswer = Record<string, any>;

/**
 * Assert (vitest `expect`) that `m`, the one answer a case got, is what `e` says: JSON-RPC 2.0, the
 * expected id, and the error code (one of the codes, or an `isError` result, when several are
 * allowed) or a result without error (containing `e.text` when given). `where` names the case in failures.
 */
export function expectAnswer(m: FuzzAnswer, e: FuzzExpect, where: string): void {
  expect(m.jsonrpc, where).toBe('2.0');
  expect(m.id, where).toEqual(e.id);
  if (e.code !== undefined && typeof e.code === 'number') {
    expect(m.error?.code, where).toBe(e.code);
  } else if (e.code !== undefined) {
    // an error with one of these codes, or an isError tool result
    if (m.error) expect(e.code, where).toContain(m.error.code);
    else expect(m.result?.isError, where).toBe(true);
  } else {
    expect(m.error, where).toBeUndefined();
    if (e.text) expect(m.result?.content?.[0]?.text, where).toContain(e.text);
  }
}

/** Request ids and junk where an id goes. Unsafe integers (above 2^53) are left out: the SDKs differ on them. */
export const idArb = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

function parses(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

/** Progress tokens and junk where one goes (`params._meta.progressToken`). */
export const tokenArb = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  fc.constant(0),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

/**
 * The six families of the wire fuzz: `ids`, `tokens` (progress tokens), `params shapes`,
 * `nesting depth`, `sizes` (across the size limit, written in pieces) and `malformed JSON`.
 */
export function fuzzFamilies(options: FuzzOptions): Record<string, fc.Arbitrary<FuzzCase>> {
  const g = generator(options);
  return {
    ids: idsFamily(g),
    tokens: tokensFamily(g),
    'params shapes': paramsShapesFamily(g),
    'nesting depth': nestingDepthFamily(g),
    sizes: sizesFamily(g),
    'malformed JSON': malformedJsonFamily(),
  };
}

/** What the families share: the options, fresh ids (one counter for all), and request text with the params prefix. */
interface Generator {
  readonly maxLine: number;
  readonly ping: string;
  readonly prefix: string | undefined;
  /** The prefix and a comma, or nothing: put first in a params object written by hand. */
  readonly pre: string;
  /** A fresh request id. */
  uid(): string;
  /** A request as text: `params` JSON-encoded with the prefix put first in an object (no params: the prefix alone). */
  request(id: unknown, method: string, params?: unknown): string;
}

function generator(options: FuzzOptions): Generator {
  const prefix = options.paramsPrefix;
  let seq = 0;
  /** JSON text of an object `params` with the prefix put first. */
  const withPrefix = (params: Record<string, unknown>) => {
    const inner = JSON.stringify(params).slice(1, -1);
    return `{${prefix ?? ''}${prefix && inner ? ',' : ''}${inner}}`;
  };
  return {
    maxLine: options.maxLine,
    ping: options.pingMethod ?? 'ping',
    prefix,
    pre: prefix ? `${prefix},` : '',
    uid: () => `${options.idPrefix ?? 'fz'}-${++seq}`,
    request: (id, method, params) => {
      const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":${JSON.stringify(method)}`;
      if (params === undefined) return prefix ? `${head},"params":{${prefix}}}` : `${head}}`;
      return `${head},"params":${isObj(params) ? withPrefix(params as Record<string, unknown>) : JSON.stringify(params)}}`;
    },
  };
}

/** Request ids: a valid one is answered with it; anything else is `-32600` with id null. */
function idsFamily(g: Generator): fc.Arbitrary<FuzzCase> {
  return idArb.map((id) => ({
    line: g.request(id, g.ping),
    expect: isId(id) ? { id } : { id: null, code: -32600 },
  }));
}

/**
 * Progress tokens. A progress token must be a string or an integer (spec basic/utilities/progress):
 * anything else makes the request invalid (-32600, with its id).
 */
function tokensFamily(g: Generator): fc.Arbitrary<FuzzCase> {
  const { prefix } = g;
  return tokenArb.map((token) => {
    const id = g.uid();
    const meta = `"_meta":{${prefix ? `${prefix.replace(/^"_meta":\{/, '').replace(/\}$/, '')},` : ''}"progressToken":${JSON.stringify(token)}}`;
    return {
      line: `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{${meta},"name":"depth","arguments":{"value":[1]}}}`,
      expect: isId(token) ? { id, text: 'depth 1' } : { id, code: -32600 },
    };
  });
}

/** `tools/call` params of every shape: not an object (-32600), a bad name or arguments (-32602), a good call. */
function paramsShapesFamily(g: Generator): fc.Arbitrary<FuzzCase> {
  return (
    fc
      .record(
        {
          params: fc.oneof(
            fc.jsonValue({ maxDepth: 2 }),
            fc.record(
              {
                name: fc.oneof(fc.constant('depth'), fc.jsonValue({ maxDepth: 1 })),
                arguments: fc.jsonValue({ maxDepth: 2 }),
              },
              { requiredKeys: [] },
            ),
          ),
          withParams: fc.boolean(),
        },
        { requiredKeys: ['params', 'withParams'] },
      )
      // `_meta` is the envelope's business (prefix): a generated key of that name would clash.
      .filter(({ params }) => !(isObj(params) && '_meta' in (params as object)))
      .map(({ params, withParams }) => {
        const id = g.uid();
        const p = withParams ? params : undefined;
        let expect: FuzzExpect;
        if (withParams && !isObj(p))
          expect = { id, code: -32600 }; // not an object: the envelope is invalid
        else {
          const o = (p ?? {}) as Record<string, unknown>;
          if (typeof o.name !== 'string' || (o.arguments !== undefined && !isObj(o.arguments)))
            expect = { id, code: -32602 };
          // A well-formed call: `depth` answers; an unknown tool is an error result or -32602, per SDK line.
          else expect = o.name === 'depth' ? { id, text: 'depth' } : { id, code: [-32602] };
        }
        return { line: g.request(id, 'tools/call', p), expect };
      })
  );
}

/**
 * Nesting depth: up to 10 000 levels (6 bytes a level at most: the line stays under a 64 KiB
 * limit); one case in five past 200 levels, where a recursive re-serialization would be at risk.
 */
function nestingDepthFamily(g: Generator): fc.Arbitrary<FuzzCase> {
  return fc
    .record({
      depth: fc.oneof(
        { arbitrary: fc.nat({ max: 200 }), weight: 4 },
        { arbitrary: fc.integer({ min: 201, max: 10_000 }), weight: 1 },
      ),
      objects: fc.boolean(),
    })
    .map(({ depth, objects }) => {
      const id = g.uid();
      const [open, close] = objects ? ['{"a":', '}'] : ['[', ']'];
      const value = `${open.repeat(depth)}1${close.repeat(depth)}`;
      return {
        line: `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{${g.pre}"name":"depth","arguments":{"value":${value}}}}`,
        expect: { id, text: `depth ${depth}` },
      };
    });
}

/** Payload sizes anywhere up to twice the limit, one case in four within 3 bytes of it, written in pieces. */
function sizesFamily(g: Generator): fc.Arbitrary<FuzzCase> {
  const MAX_LINE = g.maxLine;
  return fc
    .record({
      size: fc.oneof(
        { arbitrary: fc.nat({ max: 2 * MAX_LINE }), weight: 3 },
        { arbitrary: fc.integer({ min: -3, max: 3 }).map((d) => MAX_LINE + d), weight: 1 },
      ),
      cuts: fc.array(fc.nat(), { maxLength: 4 }),
    })
    .map(({ size, cuts }) => {
      const id = g.uid();
      const sizedLine = (n: number) =>
        `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{${g.pre}"name":"depth","arguments":{"value":"${'x'.repeat(n)}"}}}`;
      // Near the limit, `size` is the length of the whole line with its newline.
      const line =
        size < MAX_LINE - 3 || size > MAX_LINE + 3
          ? sizedLine(size)
          : sizedLine(Math.max(0, size - 1 - sizedLine(0).length));
      // Written in pieces: the reader must put a line together across writes.
      const chunks = [...new Set(cuts.map((c) => c % (line.length + 1)))].sort((a, b) => a - b);
      return {
        line,
        chunks,
        expect: line.length + 1 > MAX_LINE ? { id: null, code: -32600 } : { id, text: 'depth 0' },
      };
    });
}

/** Text that is not JSON (random, or a strict prefix of a request): `-32700` with id null. */
function malformedJsonFamily(): fc.Arbitrary<FuzzCase> {
  return fc
    .oneof(
      fc.string({ minLength: 1, maxLength: 200 }),
      fc.record({ id: fc.integer(), cut: fc.nat() }).map(({ id, cut }) => {
        const text = JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'depth', arguments: { value: [1, { a: 'b' }] } },
        });
        return text.slice(0, 1 + (cut % (text.length - 1))); // a strict prefix of an object is never JSON
      }),
    )
    .filter((s) => !/[\n]/.test(s) && s.trim() !== '' && !parses(s))
    .map((line) => ({ line, expect: { id: null, code: -32700 } }));
}

/** Nesting depth of a JSON value, counted without recursion (what the `depth` tool answers). */
export function nestingDepth(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v === 'object' && v !== null) {
      const children = Array.isArray(v) ? v : Object.values(v);
      if (d + 1 > max) max = d + 1;
      for (const c of children) stack.push([c, d + 1]);
    }
  }
  return max;
}
