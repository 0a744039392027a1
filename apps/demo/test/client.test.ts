/**
 * The walkthrough client (`npm run demo:client`) as a user runs it: a real child process (which
 * spawns the demo server over stdio), driven through a real pseudo-terminal (@lydell/node-pty) or
 * piped stdin, asserting on what the terminal shows.
 *
 * The 70-second answer is proven scaled down: the client's timeout and silence watchdog are set
 * to 2 s, the person answers after 5 s; the server's heartbeat (after 1 to 1.25 s of silence) keeps
 * the call alive and each heartbeat resets the client's timers. The control run sets the watchdog below the
 * heartbeat interval and the same wait fails, with the cancel on the wire.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pty from '@lydell/node-pty';
import { describe, expect, it } from 'vitest';

const clientTs = fileURLToPath(new URL('../src/client.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));
const tsx = import.meta.resolve('tsx');
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[ -/]*[@-~]`, 'g');

interface Run {
  /** Everything the terminal showed so far, without colour codes, CR removed. */
  text(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Bytes typed at the terminal (or written to the pipe). */
  type(s: string): void;
  signal(name: NodeJS.Signals): void;
  /** Close stdin (piped runs). */
  end(): void;
  exited: Promise<number | null>;
}

function start(args: string[], mode: 'pty' | 'pipe'): Run {
  let out = '';
  const env = { ...process.env, NO_COLOR: '1' } as Record<string, string>;
  delete env.FORCE_COLOR;
  let type: (s: string) => void;
  let signal: (name: NodeJS.Signals) => void;
  let end: () => void = () => {};
  let exited: Promise<number | null>;
  if (mode === 'pty') {
    const term = pty.spawn(process.execPath, ['--import', tsx, clientTs, ...args], { cols: 160, rows: 50, cwd, env });
    term.onData((d) => (out += d));
    type = (s) => term.write(s);
    signal = (name) => term.kill(name);
    exited = new Promise((resolve) => term.onExit(({ exitCode, signal: sig }) => resolve(sig ? 128 + sig : exitCode)));
  } else {
    const child = spawn(process.execPath, ['--import', tsx, clientTs, ...args], {
      cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    type = (s) => child.stdin.write(s);
    end = () => child.stdin.end();
    signal = (name) => child.kill(name);
    exited = new Promise((resolve) =>
      child.on('exit', (code, sig) => resolve(sig ? 128 + (sig === 'SIGINT' ? 2 : 15) : code)),
    );
  }
  const text = () => out.replace(ANSI, '').replace(/\r/g, '');
  return {
    text,
    type: (s) => type(s),
    signal: (n) => signal(n),
    end: () => end(),
    exited,
    async waitFor(pattern, timeoutMs = 60_000) {
      const t0 = Date.now();
      while (!pattern.test(text())) {
        if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${pattern} in:\n${text()}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const timers = ['--timeout-ms', '2000', '--silence-ms', '2000'];

describe('demo client at a terminal (pty)', () => {
  it('a person who answers after 5 s (2.5 times the 2 s timeout) still completes the step; garbage is asked again', async () => {
    const run = start(['--only', 'billing.refund', ...timers], 'pty');
    await run.waitFor(/Approve the refund \[y\/n\]: $/m);
    await pause(2_500);
    run.type('maybe\r');
    await run.waitFor(/please answer y or n\n {4}Approve the refund \[y\/n\]: $/m);
    await pause(2_500);
    run.type('y\r');
    expect(await run.exited).toBe(0);
    const out = run.text();
    expect(out).toMatch(
      /result \((\d+\.\d) s, (\d+) heartbeat\(s\) while waiting\): Refunded \$\d+\.\d\d to .+ for invoice INV-1001\./,
    );
    const [, secs, beats] = /result \((\d+\.\d) s, (\d+) heartbeat/.exec(out)!;
    expect(Number(secs)).toBeGreaterThanOrEqual(5);
    expect(Number(beats)).toBeGreaterThanOrEqual(3);
    expect(out).not.toContain('notifications/cancelled');
    expect(out).toMatch(/2 ok, 0 skipped, 0 failed/); // tools/list and billing.refund
  }, 90_000);

  it('Ctrl+C at the prompt ends the walkthrough at once: the call is cancelled, exit 130, no next step', async () => {
    const run = start(['--only', 'billing.refund,account.connect'], 'pty');
    await run.waitFor(/Approve the refund \[y\/n\]: $/m);
    const t0 = Date.now();
    run.type('\x03');
    expect(await run.exited).toBe(130);
    expect(Date.now() - t0).toBeLessThan(15_000); // at once: well under the 60 s request timeout, on a loaded machine
    const out = run.text();
    expect(out).toContain('^C interrupted: cancelling what is in flight and stopping the walkthrough');
    expect(out).toMatch(
      /→ notifications\/cancelled sent for request \d+ \(billing\.refund\): billing\.refund: cancelled \(interrupted \(Ctrl\+C\)\)/,
    );
    expect(out).not.toContain('account.connect: out-of-band consent');
    expect(out).not.toContain('summary');
  }, 90_000);
});

describe('demo client with piped stdin (scripted input)', () => {
  it('reads answers line by line, also lines typed ahead; an invalid one is asked again, not taken as a decline', async () => {
    const run = start(['--only', 'billing.refund'], 'pipe');
    run.type('maybe\nn\n');
    expect(await run.exited).toBe(0);
    const out = run.text();
    expect(out).toContain(
      'Approve the refund [y/n]: maybe\n    please answer y or n\n    Approve the refund [y/n]: n\n',
    );
    expect(out).toContain('Invoice INV-1001: not refunded (not approved).');
  }, 90_000);

  it('at the end of the input the question is declined', async () => {
    const run = start(['--only', 'billing.refund'], 'pipe');
    await run.waitFor(/\[y\/n\]: $/m);
    run.end();
    expect(await run.exited).toBe(0);
    const out = run.text();
    expect(out).toContain('(end of input: declining)');
    expect(out).toContain('Invoice INV-1001: not refunded (declined).');
  }, 90_000);

  it('control: a watchdog shorter than the heartbeat gives up on the same wait, sends the cancel and says why', async () => {
    const run = start(['--only', 'billing.refund', '--silence-ms', '300'], 'pipe');
    await run.waitFor(/\[y\/n\]: $/m);
    await run.waitFor(/✗ billing\.refund: no progress and no result for \d+ ms \(silence watchdog, silenceMs 300\)/);
    expect(await run.exited).toBe(1);
    const out = run.text();
    expect(out).toMatch(
      /→ notifications\/cancelled sent for request \d+ \(billing\.refund\): billing\.refund: no progress and no result/,
    );
    expect(out).toContain('(the server withdrew the question)');
    expect(out).toMatch(/1 ok, 0 skipped, 1 failed/);
  }, 90_000);

  it('SIGINT (Ctrl+C in a terminal that owns the process group) while asking: cancel sent, exit 130', async () => {
    const run = start(['--only', 'billing.refund'], 'pipe');
    await run.waitFor(/\[y\/n\]: $/m);
    run.signal('SIGINT');
    expect(await run.exited).toBe(130);
    expect(run.text()).toMatch(/→ notifications\/cancelled sent for request \d+ \(billing\.refund\)/);
  }, 90_000);
});

describe('demo client: corpus.reindex against the demo server it spawns (stdio, --inline-ms 1000)', () => {
  it('runs all three corpus.reindex steps: the job handle, the partial output, and the 2025-11-25 task (not skipped), whose result is the tool result', async () => {
    const run = start(['--only', 'corpus.reindex'], 'pipe');
    const code = await run.exited;
    const out = run.text();
    if (process.env.SHOW_TRANSCRIPT) console.log(out);
    expect(code).toBe(0);
    expect(out).toMatch(/handle {2}working.*; next poll in 1000 ms/);
    expect(out).toMatch(/task working.*; next tasks\/get in 1000 ms/);
    expect(out).toMatch(/task completed.*\n {2}result: Reindexed 60 documents\.\n/);
    expect(out).toContain('✓ tasks/get at the task pollInterval, then tasks/result');
    expect(out).not.toContain('skipped: the server offers no task');
    expect(out).toMatch(/4 ok, 0 skipped, 0 failed/);
  }, 120_000);
});

describe('demo client: corpus.reindex through @mcp-tether/jobs (a tethered HTTP server in the test)', () => {
  it('follows the job handle with the server pollAfterMs, reads the partial output by subscription, and runs it as a 2025-11-25 task', async () => {
    const { tether, handler, progressEvent } = await import('@mcp-tether/core');
    const { serveHttp } = await import('@mcp-tether/testing');
    const { cancel } = await import('@mcp-tether/cancel');
    const { progressMiddleware } = await import('@mcp-tether/progress');
    const { mrtr } = await import('@mcp-tether/mrtr');
    const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
    const { z } = await import('zod');
    const { JobEngine, MemoryJobStore, jobs, taskFront } = await import('@mcp-tether/jobs');
    const engine = new JobEngine({ store: new MemoryJobStore() });
    // The same tool in handle mode and behind the task front: a task of it runs as the task only.
    const j = jobs({
      engine,
      tools: ['corpus.reindex'],
      inlineMs: 200,
      notifyIntervalMs: 50,
      fronts: [taskFront({ engine, taskSupport: { 'corpus.reindex': 'optional' }, pollIntervalMs: 300 })],
    });
    const middlewares = [cancel(), progressMiddleware(), mrtr(), j];
    const http = await serveHttp(() => {
      const server = tether(new McpServer({ name: 'reindexer', version: '1.0.0' }), middlewares);
      j.registerTools(server as never);
      server.registerTool(
        'corpus.reindex',
        { inputSchema: { files: z.number().int(), delayMs: z.number().int() } },
        handler(async function* (args: { files: number; delayMs: number }, ctx) {
          for (let done = 1; done <= args.files; done++) {
            await new Promise((r) => setTimeout(r, 12)); // short on purpose, whatever delayMs the client asks for
            ctx.signal.throwIfAborted();
            await ctx.job?.append(`doc-${done}.md\n`);
            yield progressEvent(done, args.files, `doc-${done}.md`);
          }
          return { content: [{ type: 'text' as const, text: `indexed ${args.files} files` }] };
        }) as never,
      );
      return server;
    });
    try {
      const run = start(['--url', http.url.href, '--only', 'corpus.reindex'], 'pipe');
      const code = await run.exited;
      const out = run.text();
      if (process.env.SHOW_TRANSCRIPT) console.log(out);
      expect(code).toBe(0);
      expect(out).toMatch(/handle {2}working.*; next poll in 1000 ms/);
      expect(out).toMatch(/jobs\.status → completed/);
      expect(out).toMatch(/✓ followed \d+ poll\(s\) at the server's pollAfterMs \(1000( → \d+)* ms\) to the result/);
      expect(out).toMatch(/result: indexed 60 files\n {2}partial output: 60 line\(s\) in \d+ read\(s\)\n/);
      expect(out).toContain('✓ resources/subscribe: read on each resources/updated');
      expect(out).toMatch(/task working.*; next tasks\/get in 300 ms/);
      expect(out).toMatch(/task completed.*\n {2}result: indexed 60 files\n/);
      expect(out).toContain('✓ tasks/get at the task pollInterval, then tasks/result');
      expect(out).toMatch(/4 ok, 0 skipped, 0 failed/);
    } finally {
      await http.close();
      await engine.close(1_000);
    }
  }, 120_000);
});
