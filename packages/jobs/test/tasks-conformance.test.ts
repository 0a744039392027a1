/**
 * The official MCP conformance suite's tasks-extension scenarios (SEP-2663, `@modelcontextprotocol/conformance`
 * 0.2.0-alpha.12, 2026-07-28 wire) against an SDK 2.x server with the task front, over real HTTP on
 * 127.0.0.1. Opt-in (it runs the suite through `npx -p node@22`, which may download it):
 *
 *   TETHER_CONFORMANCE=1 npx vitest run test/tasks-conformance.test.ts
 *
 * Fixtures are the ones the scenarios name: `greet`, `slow_compute`, `failing_job` (taskSupport
 * required), `protocol_error_job`, `confirm_delete`, `multi_input`, `test_tool_with_task` (asks over
 * MRTR first: `askFirst`, with `mrtr()` before the front).
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { handler, ProtocolError, tether, type CallContext } from '@mcp-tether/core';
import { ask, mrtr, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { sleep } from '@mcp-tether/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JobEngine } from '../src/engine.js';
import { MemoryJobStore } from '../src/memory.js';
import { taskFront } from '../src/tasks/index.js';

const VERSION = '0.2.0-alpha.12';
const SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-required-task-error',
  'tasks-dispatch-and-envelope',
  'tasks-status-notifications',
  'tasks-mrtr-composition',
];
/**
 * Scenarios we fail on purpose, with the reason (the suite's baseline idea: a listed scenario that
 * starts passing fails this test, so the list cannot go stale). None today.
 */
const EXPECTED_FAILURES = new Set<string>([]);
const enabled = process.env.TETHER_CONFORMANCE === '1';

const engine = new JobEngine({ store: new MemoryJobStore(), progressWriteMs: 0 });
const front = taskFront({
  engine,
  askFirst: ['test_tool_with_task'],
  taskSupport: { test_tool_with_task: 'required', slow_compute: 'optional', failing_job: 'required', protocol_error_job: 'optional', confirm_delete: 'optional', multi_input: 'optional' },
  pollIntervalMs: 200,
});
/** MRTR before the task (seals requestState; one instance for every per-request server). */
const inputRounds = mrtr();
/** A protocol fault of the chain (McpServer turns a tool's own throw into an isError result). */
const protocolFault = { name: 'protocol-fault', when: (ctx: CallContext) => ctx.name === 'protocol_error_job', handle: async () => { throw new ProtocolError(-32603, 'protocol_error_job: internal failure'); } };

function fixtureServer(): McpServer {
  const server = tether(new McpServer({ name: 'tether-tasks-conformance', version: '0.0.0' }), [inputRounds, front, protocolFault]);
  server.registerTool('greet', { inputSchema: { name: z.string() } }, async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }));
  server.registerTool('slow_compute', { inputSchema: { seconds: z.number(), label: z.string().optional() } }, handler(async ({ seconds, label }: { seconds: number; label?: string }, ctx: CallContext) => {
    await sleep(seconds * 1000, ctx.signal);
    return { content: [{ type: 'text' as const, text: `computed ${label ?? ''} in ${seconds}s` }] };
  }));
  server.registerTool('failing_job', {}, (async (ctx: CallContext) => {
    await sleep(1000, ctx.signal);
    return { content: [{ type: 'text' as const, text: 'failing_job: the job failed' }], isError: true };
  }) as never);
  server.registerTool('protocol_error_job', {}, async () => ({ content: [{ type: 'text', text: 'never' }] }));
  const confirm = { confirm: ask.boolean('Delete the file?') };
  server.registerTool('confirm_delete', { inputSchema: { filename: z.string() } }, handler(async ({ filename }: { filename: string }) => {
    const answer = readInputResult(confirm);
    if (!answer) return requireInput.elicit(`Delete ${filename}?`, confirm);
    return { content: [{ type: 'text' as const, text: answer.action === 'accept' && answer.content.confirm ? `deleted ${filename}` : 'kept' }] };
  }));
  const first = { name: ask.string('Name') };
  const second = { confirm: ask.boolean('Confirm') };
  server.registerTool('multi_input', {}, handler(async () => {
    const a = readInputResult(first);
    const b = readInputResult(second);
    if (!a || !b) {
      // two questions pending at once (keys `name` and `confirm`)
      return {
        resultType: 'input_required' as const,
        inputRequests: { ...(!a ? requireInput.elicit('Your name?', first).inputRequests : {}), ...(!b ? requireInput.elicit('Confirm?', second).inputRequests : {}) },
      };
    }
    return { content: [{ type: 'text' as const, text: 'both answered' }] };
  }));
  const user = { name: ask.string('Your name') };
  server.registerTool('test_tool_with_task', {}, handler(async () => {
    const answer = readInputResult(user);
    if (!answer) return requireInput.elicit('Who are you?', user, { key: 'user_name' });
    return { content: [{ type: 'text' as const, text: `hello ${answer.action === 'accept' ? answer.content.name : 'nobody'}` }] };
  }));
  return server;
}

let url = '';
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  if (!enabled) return;
  const mcp = createMcpHandler(() => fixtureServer(), { onerror: () => {} } as never);
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const abort = new AbortController();
      res.on('close', () => abort.abort());
      const body = chunks.length && req.method !== 'GET' && req.method !== 'HEAD' ? Buffer.concat(chunks) : undefined;
      try {
        const response = await mcp.fetch(new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body, signal: abort.signal }));
        res.writeHead(response.status, Object.fromEntries(response.headers));
        if (response.body) Readable.fromWeb(response.body as never).pipe(res);
        else res.end();
      } catch (err) {
        res.writeHead(500).end(String(err));
      }
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  close = async () => {
    await mcp.close();
    http.closeAllConnections();
    await new Promise<void>((r) => http.close(() => r()));
  };
}, 30_000);

afterAll(async () => {
  await close?.();
  await engine.close(1_000);
});

function runScenario(scenario: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const args = ['-y', '-p', 'node@22', '-p', `@modelcontextprotocol/conformance@${VERSION}`, '--', 'conformance', 'server', '--url', url, '--scenario', scenario];
    const child = spawn('npx', args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* gone */
      }
    }, 240_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe.runIf(enabled)(`conformance ${VERSION}: tasks extension scenarios`, () => {
  for (const scenario of SCENARIOS) {
    it(scenario, async () => {
      const { code, out } = await runScenario(scenario);
      const lines = out.split('\n').filter((l) => /\] (SUCCESS|FAILURE|WARNING|SKIPPED|INFO)\b|Passed:|SKIPPED:|errorMessage/.test(l));
      console.log(`--- ${scenario} (exit ${code})\n${lines.join("\n")}`);
      if (process.env.TETHER_CONFORMANCE_VERBOSE) console.log(out);
      // The suite's own verdict line: `Passed: P/N, F failed, W warnings`.
      const verdict = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(out);
      expect(verdict, 'the suite printed no verdict').not.toBeNull();
      const failed = Number(verdict![3]);
      if (EXPECTED_FAILURES.has(scenario)) {
        expect(failed, 'an expected failure now passes: drop it from EXPECTED_FAILURES').toBeGreaterThan(0);
        return;
      }
      expect(failed).toBe(0);
      expect(out).not.toMatch(/\bFAILURE\b/);
      expect(code).toBe(0);
    }, 300_000);
  }
});
