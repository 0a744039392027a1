// Issue 16: a fast-check fuzz of tethered stdio servers, SDK 1.x, 2.x and 2.x serveStdio (with hardenStdio), each a real child process
// (the SDK's own StdioServerTransport, line limit set to 64 KiB so both sides of it are cheap to hit).
// Every case must be answered per JSON-RPC 2.0 with the right code and id (-32700 id null; -32600
// with the id when it is valid; -32602 for malformed call params; a result otherwise), nothing may
// crash or be dropped, nothing but JSON may reach stdout, and a normal call is served after each batch.
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnStdio, type RawStdio } from '../src/testing/index.js';

const fixture = fileURLToPath(new URL('./fixtures/stdio-faults-server.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));
/** The fixture in a child process: `node --import tsx stdio-faults-server.ts <mode> [maxLine]`. */
const spawnRaw = (args: string[]) => spawnStdio(process.execPath, ['--import', 'tsx', fixture, ...args], { cwd });
const MAX_LINE = 64 * 1024;
const RUNS = 1_000;
const BATCH = 100;

/** What a case must get back: a result, or an error with this code, for this id. */
type Expect = { id: string | number | null; code?: number | readonly number[]; text?: string };
type Case = { line: string; chunks?: number[]; expect: Expect };

const isId = (v: unknown): v is string | number => typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));
const isObj = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Request ids and junk where an id goes. Unsafe integers (above 2^53) are left out: the SDKs differ on them. */
const idArb = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

let seq = 0;
const uid = () => `fz-${++seq}`;

const families: Record<string, fc.Arbitrary<Case>> = {
  ids: idArb.map((id) => ({
    line: JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }),
    expect: isId(id) ? { id } : { id: null, code: -32600 },
  })),
  'params shapes': fc
    .record(
      {
        params: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.record({ name: fc.oneof(fc.constant('depth'), fc.jsonValue({ maxDepth: 1 })), arguments: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] })),
        withParams: fc.boolean(),
      },
      { requiredKeys: ['params', 'withParams'] },
    )
    .map(({ params, withParams }) => {
      const id = uid();
      const msg: Record<string, unknown> = { jsonrpc: '2.0', id, method: 'tools/call' };
      if (withParams) msg.params = params;
      const p = withParams ? params : undefined;
      let expect: Expect;
      if (withParams && !isObj(p)) expect = { id, code: -32600 }; // not an object: the envelope is invalid
      else {
        const o = (p ?? {}) as Record<string, unknown>;
        if (typeof o.name !== 'string' || (o.arguments !== undefined && !isObj(o.arguments))) expect = { id, code: -32602 };
        // A well-formed call: `depth` answers; an unknown tool is an error result or -32602, per SDK line.
        else expect = o.name === 'depth' ? { id, text: 'depth' } : { id, code: [-32602] };
      }
      return { line: JSON.stringify(msg), expect };
    }),
  // Up to 10 000 levels (6 bytes a level at most: the line stays under the 64 KiB limit); one case
  // in five past 200 levels, where a recursive re-serialization would be at risk.
  'nesting depth': fc.record({ depth: fc.oneof({ arbitrary: fc.nat({ max: 200 }), weight: 4 }, { arbitrary: fc.integer({ min: 201, max: 10_000 }), weight: 1 }), objects: fc.boolean() }).map(({ depth, objects }) => {
    const id = uid();
    const [open, close] = objects ? ['{"a":', '}'] : ['[', ']'];
    const value = `${open.repeat(depth)}1${close.repeat(depth)}`;
    return { line: `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"depth","arguments":{"value":${value}}}}`, expect: { id, text: `depth ${depth}` } };
  }),
  // Payload sizes anywhere up to twice the limit, one case in four within 3 bytes of it.
  sizes: fc.record({ size: fc.oneof({ arbitrary: fc.nat({ max: 2 * MAX_LINE }), weight: 3 }, { arbitrary: fc.integer({ min: -3, max: 3 }).map((d) => MAX_LINE + d), weight: 1 }), cuts: fc.array(fc.nat(), { maxLength: 4 }) }).map(({ size, cuts }) => {
    const id = uid();
    const sizedLine = (n: number) => `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"depth","arguments":{"value":"${'x'.repeat(n)}"}}}`;
    // Near the limit, `size` is the length of the whole line with its newline.
    const line = size < MAX_LINE - 3 || size > MAX_LINE + 3 ? sizedLine(size) : sizedLine(Math.max(0, size - 1 - sizedLine(0).length));
    // Written in pieces: the reader must put a line together across writes.
    const chunks = [...new Set(cuts.map((c) => c % (line.length + 1)))].sort((a, b) => a - b);
    return { line, chunks, expect: line.length + 1 > MAX_LINE ? { id: null, code: -32600 } : { id, text: 'depth 0' } };
  }),
  'malformed JSON': fc
    .oneof(
      fc.string({ minLength: 1, maxLength: 200 }),
      fc.record({ id: fc.integer(), cut: fc.nat() }).map(({ id, cut }) => {
        const text = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'depth', arguments: { value: [1, { a: 'b' }] } } });
        return text.slice(0, 1 + (cut % (text.length - 1))); // a strict prefix of an object is never JSON
      }),
    )
    .filter((s) => !/[\n]/.test(s) && s.trim() !== '' && !parses(s))
    .map((line) => ({ line, expect: { id: null, code: -32700 } })),
};

function parses(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

/** Send one case (in pieces when asked) and check the one message it gets back. */
async function check(raw: RawStdio, c: Case): Promise<void> {
  const from = raw.messages.length;
  const text = `${c.line}\n`;
  if (c.chunks?.length) {
    let at = 0;
    for (const cut of [...c.chunks, text.length]) {
      if (cut > at) await raw.write(text.slice(at, cut));
      at = Math.max(at, cut);
    }
  } else await raw.write(text);
  const m = await raw.next(from, 10_000);
  const e = c.expect;
  const where = `${c.line.slice(0, 200)} → ${JSON.stringify(m).slice(0, 300)}`;
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
  await new Promise((r) => setImmediate(r));
  expect(raw.messages.length, `${where}: exactly one answer`).toBe(from + 1);
}

describe.each(['v1', 'v2', 'v2-serve'] as const)('stdio fuzz, SDK %s (real child process)', (line) => {
  let raw: RawStdio;
  beforeAll(async () => {
    raw = await spawnRaw([line, String(MAX_LINE)]);
  }, 30_000);
  afterAll(async () => {
    raw.child.stdin.end();
    expect(await raw.exited(10_000)).toBe(0); // no crash: a clean exit when the client leaves
    expect(raw.garbage).toEqual([]);
    expect(raw.stderr()).not.toMatch(/Uncaught|unhandled|RangeError|Maximum call stack/i);
  }, 20_000);

  for (const [family, arb] of Object.entries(families)) {
    it(`${family}: ${RUNS} cases, each answered per JSON-RPC; a normal call served after each batch of ${BATCH}`, async () => {
      let n = 0;
      // A failing case is reported by its first 200 characters (lines run up to 128 KiB).
      const shown = arb.map((c) => Object.assign(c, { [fc.toStringMethod]: () => JSON.stringify(c.line.slice(0, 200)) }));
      await fc.assert(
        fc.asyncProperty(shown, async (c) => {
          await check(raw, c);
          if (++n % BATCH === 0) {
            const r = await raw.request(`normal-${family}-${n}`, 'tools/call', { name: 'depth', arguments: { value: [[]] } });
            expect(r.result?.content?.[0]?.text).toBe('depth 2');
          }
        }),
        { numRuns: RUNS, endOnFailure: true },
      );
      expect(raw.child.exitCode).toBeNull(); // still running
    }, 120_000);
  }
});
