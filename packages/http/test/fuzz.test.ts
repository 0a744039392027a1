/**
 * Issue 16: a fast-check fuzz on the wire over Streamable HTTP (families: ids, progress tokens, params shapes, nesting depth, sizes, malformed JSON), both eras on one endpoint (2025-era
 * session on SDK 1.32.2, 2026-07-28 requests on SDK 2.4.0), with the generators of core's stdio fuzz
 * (`@mcp-tether/testing/fuzz`): 1 000 cases per family, each answered per JSON-RPC with the
 * right code and id (over the body limit: 413 with -32600 and id null), exactly one answer, no
 * crash, and a normal call served after each batch of 100.
 */
import fc from 'fast-check';
import { expectAnswer, fuzzFamilies, type FuzzCase } from '@mcp-tether/testing/fuzz';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHttp, type McpHttp } from '../src/index.js';
import { v1Server, v2Server } from './fixtures/app.js';
import { H, META26, V26, rawSession } from './helpers.js';

const MAX_LINE = 64 * 1024;
const RUNS = 1_000;
const BATCH = 100;

/** Every JSON-RPC message of a response (JSON body or SSE events). */
async function messagesOf(res: Response): Promise<Array<Record<string, any>>> {
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    return text
      .split('\n\n')
      .map((b) =>
        b
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trim())
          .join('\n'),
      )
      .filter((d) => d !== '')
      .map((d) => JSON.parse(d));
  }
  return text ? [JSON.parse(text)] : [];
}

/** Headers a 2026-07-28 client derives from its message (MCP-Protocol-Version, Mcp-Method, Mcp-Name). */
function modernHeadersFor(line: string): Record<string, string> {
  const h: Record<string, string> = { 'mcp-protocol-version': V26, 'mcp-method': 'tools/call' };
  try {
    const m = JSON.parse(line);
    if (typeof m?.method === 'string' && /^[\x21-\x7e]+$/.test(m.method)) h['mcp-method'] = m.method;
    const name = m?.params?.name;
    // Values a header cannot carry as they are go base64-encoded (2026-07-28 transports, header encoding).
    if (typeof name === 'string')
      h['mcp-name'] =
        /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(name) && !name.startsWith('=?')
          ? name
          : `=?base64?${Buffer.from(name).toString('base64')}?=`;
  } catch {
    /* not JSON */
  }
  return h;
}

let front: McpHttp;
let url: URL;
beforeAll(async () => {
  // The body limit as the stdio families count a line: `line.length + 1 > MAX_LINE` is refused.
  // No event store and no keep-alives: each case costs less (resumability is tested elsewhere).
  front = createMcpHttp({
    legacy: () => v1Server(),
    modern: () => v2Server(),
    maxBodyBytes: MAX_LINE - 1,
    eventStore: false,
    keepAliveMs: 0,
  });
  ({ url } = await front.listen(0));
});
afterAll(async () => {
  await front.close();
});

/** The front's default `maxJsonDepth`. */
const MAX_DEPTH = 1_000;

const eras = [
  { era: '2025-era session (SDK 1.32.2)', modern: false },
  { era: '2026-07-28 requests (SDK 2.4.0)', modern: true },
] as const;

describe.each(eras)('HTTP fuzz, $era', ({ modern }) => {
  let session: Record<string, string> = {};
  beforeAll(async () => {
    if (!modern) session = await rawSession(url);
  });
  const families = fuzzFamilies(
    modern
      ? {
          maxLine: MAX_LINE,
          pingMethod: 'tools/list',
          paramsPrefix: `"_meta":${JSON.stringify(META26)}`,
          idPrefix: 'm',
        }
      : { maxLine: MAX_LINE, idPrefix: 'l' },
  );
  const send = (line: string) =>
    fetch(url, { method: 'POST', headers: { ...H, ...(modern ? modernHeadersFor(line) : session) }, body: line });

  async function check(c: FuzzCase): Promise<void> {
    // Past maxJsonDepth (default 1 000) the front refuses the message before anything walks it.
    // The limit counts the whole message: the envelope (message, params, arguments) adds its levels
    // to the argument's own, so an argument within 4 levels of the limit may be refused too.
    const d = c.expect.text?.startsWith('depth ') ? Number(c.expect.text.slice(6)) : 0;
    const res = await send(c.line);
    const messages = await messagesOf(res);
    const answers = messages.filter((m) => m.id !== undefined && m.method === undefined);
    const where = `${c.line.slice(0, 200)} → ${res.status} ${JSON.stringify(messages).slice(0, 300)}`;
    expect(answers, `${where}: exactly one answer`).toHaveLength(1);
    const m = answers[0]!;
    if (d > MAX_DEPTH || (d > MAX_DEPTH - 4 && m.error !== undefined))
      c = { ...c, expect: { id: c.expect.id, code: -32600 } };
    expectAnswer(m, c.expect, where);
    if (m.id === null) expect(res.status, where).toBeGreaterThanOrEqual(400);
  }

  for (const [family, arb] of Object.entries(families)) {
    it(`${family}: ${RUNS} cases, each answered per JSON-RPC; a normal call served after each batch of ${BATCH}`, async () => {
      let n = 0;
      const shown = arb.map((c) =>
        Object.assign(c, { [fc.toStringMethod]: () => JSON.stringify(c.line.slice(0, 200)) }),
      );
      await fc.assert(
        fc.asyncProperty(shown, async (c) => {
          await check(c);
          if (++n % BATCH === 0) {
            const line = JSON.stringify({
              jsonrpc: '2.0',
              id: `normal-${n}`,
              method: 'tools/call',
              params: { ...(modern && { _meta: META26 }), name: 'depth', arguments: { value: [[]] } },
            });
            const [r] = await messagesOf(await send(line));
            expect(r?.result?.content?.[0]?.text).toBe('depth 2');
          }
        }),
        { numRuns: RUNS, endOnFailure: true },
      );
      expect(front.stats.inflight).toBe(0);
    }, 400_000); // ~20 s alone; 120 s ran out with the other suites beside it on 2 loaded cores (load ~35)
  }
});
