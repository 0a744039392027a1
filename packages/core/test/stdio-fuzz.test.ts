// Issue 16: a fast-check fuzz of tethered stdio servers, SDK 1.x, 2.x and 2.x serveStdio (with hardenStdio), each a real child process
// (the SDK's own StdioServerTransport, line limit set to 64 KiB so both sides of it are cheap to hit).
// Every case must be answered per JSON-RPC 2.0 with the right code and id (-32700 id null; -32600
// with the id when it is valid; -32602 for malformed call params; a result otherwise), nothing may
// crash or be dropped, nothing but JSON may reach stdout, and a normal call is served after each batch.
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnStdio, type RawStdio } from '@mcp-tether/testing';
import { expectAnswer, fuzzFamilies, type FuzzCase } from '@mcp-tether/testing/fuzz';

const fixture = fileURLToPath(new URL('./fixtures/stdio-faults-server.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));
/** The fixture in a child process: `node --import tsx stdio-faults-server.ts <mode> [maxLine]`. */
const spawnRaw = (args: string[]) => spawnStdio(process.execPath, ['--import', 'tsx', fixture, ...args], { cwd });
const MAX_LINE = 64 * 1024;
const RUNS = 1_000;
const BATCH = 100;

type Case = FuzzCase;

// The generators are the core test kit's (shared with @mcp-tether/http's HTTP fuzz).
const families = fuzzFamilies({ maxLine: MAX_LINE });

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
  const where = `${c.line.slice(0, 200)} → ${JSON.stringify(m).slice(0, 300)}`;
  expectAnswer(m, c.expect, where);
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
      const shown = arb.map((c) =>
        Object.assign(c, { [fc.toStringMethod]: () => JSON.stringify(c.line.slice(0, 200)) }),
      );
      await fc.assert(
        fc.asyncProperty(shown, async (c) => {
          await check(raw, c);
          if (++n % BATCH === 0) {
            const r = await raw.request(`normal-${family}-${n}`, 'tools/call', {
              name: 'depth',
              arguments: { value: [[]] },
            });
            expect(r.result?.content?.[0]?.text).toBe('depth 2');
          }
        }),
        { numRuns: RUNS, endOnFailure: true },
      );
      expect(raw.child.exitCode).toBeNull(); // still running
    }, 120_000);
  }
});
