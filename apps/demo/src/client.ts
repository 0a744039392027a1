#!/usr/bin/env node
/**
 * The walkthrough client: drives every demo tool with a real SDK client wrapped by
 * `@mcp-tether/client` and prints a transcript.
 *
 *   npm run demo:client                              spawn the demo over stdio
 *   npm run demo:client -- --url http://127.0.0.1:3000/mcp
 *   npm run demo:client -- --yes | --no             answer confirmations without asking
 *
 * Exit code 0 when every step behaved as the demo promises, 1 otherwise, 130 after Ctrl+C, 2 for
 * bad usage.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  isCallAborted,
  jobHandleOf,
  tetherClient,
  type JobHandle,
  type LogEntry,
  type ProgressReport,
  type TetherClient,
  type ToolResult,
} from '@mcp-tether/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ElicitRequestSchema, type LoggingLevel, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { answerElicitation, answers, questionsOnScreen } from './walkthrough/answers.js';
import {
  cleanup,
  interrupt,
  only,
  opts,
  paint,
  say,
  SILENCE_MS,
  setCleanup,
  type Style,
  TIMEOUT_MS,
} from './walkthrough/cli.js';
import { answered, negotiatedVersion, ProgressView, sentCalls, tap } from './walkthrough/wire.js';

// The command line, printing and Ctrl+C are walkthrough/cli.ts; answering the server's questions is
// walkthrough/answers.ts; the wire tap and the progress display are walkthrough/wire.ts.

// ---------------------------------------------------------------- connection

function makeTransport(): { transport: Transport; describe: string } {
  if (opts.url)
    return { transport: new StreamableHTTPClientTransport(new URL(opts.url)), describe: `Streamable HTTP ${opts.url}` };
  const fromSource = import.meta.url.endsWith('.ts');
  const bin = fileURLToPath(new URL(fromSource ? './bin.ts' : './bin.js', import.meta.url));
  const serverArgs = ['--stdio', '--quiet'];
  // The demo server runs corpus.reindex inline for 20 s before it answers with a job handle; ask it
  // for 1 s so that the walkthrough shows the handle (servers built before --inline-ms lack the flag).
  if (readFileSync(bin, 'utf8').includes('inline-ms')) serverArgs.push('--inline-ms', '1000');
  const args = fromSource ? ['--import', import.meta.resolve('tsx'), bin, ...serverArgs] : [bin, ...serverArgs];
  return {
    transport: new StdioClientTransport({ command: process.execPath, args, stderr: 'inherit' }),
    describe: `stdio (spawned: node ${fromSource ? 'src/bin.ts' : 'dist/bin.js'} --stdio)`,
  };
}

// ---------------------------------------------------------------- the walkthrough

type StepResult = 'ok' | 'failed' | 'skipped';
const results: Array<{ title: string; result: StepResult; note?: string }> = [];
let stepNo = 0;
let tools = new Map<string, Tool>();

const textOf = (r: ToolResult) =>
  (r.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');

async function step(title: string, needs: string[], body: () => Promise<StepResult | void>): Promise<void> {
  if (only && needs.length && !needs.some((t) => only?.has(t))) return;
  if (interrupt.signal.aborted) return;
  stepNo++;
  say();
  say(paint('bold', `── ${stepNo}. ${title} ${'─'.repeat(Math.max(3, 70 - title.length))}`));
  const missing = needs.filter((t) => !tools.has(t));
  if (missing.length) {
    const note = `server has no ${missing.join(', ')} (package not wired in yet)`;
    say(paint('yellow', `  skipped: ${note}`));
    results.push({ title, result: 'skipped', note });
    return;
  }
  try {
    const r = (await body()) ?? 'ok';
    results.push({ title, result: r });
  } catch (err) {
    if (interrupt.signal.aborted) await new Promise(() => {}); // Ctrl+C: onInterrupt exits
    say(paint('red', `  ✗ ${(err as Error).message}`));
    // A call we gave up on leaves its question on screen until the server withdraws it (it does on the cancel).
    for (let i = 0; i < 50 && questionsOnScreen() > 0; i++) await sleep(20);
    results.push({ title, result: 'failed', note: (err as Error).message });
  }
}

const verdict = (ok: boolean, good: string, bad: string): StepResult => {
  say(ok ? paint('green', `  ✓ ${good}`) : paint('red', `  ✗ ${bad}`));
  return ok ? 'ok' : 'failed';
};

const LEVEL_STYLE: Record<LoggingLevel, Style> = {
  debug: 'gray',
  info: 'blue',
  notice: 'cyan',
  warning: 'yellow',
  error: 'red',
  critical: 'red',
  alert: 'magenta',
  emergency: 'magenta',
};

async function main(): Promise<number> {
  const { transport, describe } = makeTransport();
  tap(transport);
  const client = new Client(
    { name: 'tether-demo-client', version: '0.1.0' },
    { capabilities: { elicitation: { form: {}, url: {} }, tasks: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, (req, extra) => answerElicitation(req.params, extra.signal));
  const logs: LogEntry[] = [];
  // Every call: a progress token of its own, the timeout reset by progress (heartbeats included),
  // the silence watchdog, and a cancel sent on every abort. Logs go to this sink, never into results.
  const tc: TetherClient = tetherClient(client, {
    timeoutMs: TIMEOUT_MS,
    silenceMs: SILENCE_MS,
    maxTotalMs: 20 * 60_000,
    // The walkthrough shows the server side keeping a question alive: its heartbeat speaks for the
    // call while the person answers, and each heartbeat resets these timers. (A host talking to
    // servers without heartbeat keeps the default, which pauses the timers while it asks.)
    pauseWhileAsking: false,
    logLevel: 'debug',
    onLog: (entry) => {
      logs.push(entry);
      const { level, logger, data } = entry;
      say(
        `    ${paint(LEVEL_STYLE[level], `[${level.padEnd(9)}]`)} ${logger ?? '-'}: ${typeof data === 'string' ? data : JSON.stringify(data)}`,
      );
    },
  });
  setCleanup(async () => {
    answers.close();
    await client.close();
  });

  say(paint('bold', 'tether demo walkthrough'));
  say(`  transport: ${describe}`);
  say(
    `  answers:   ${opts.yes ? '--yes (accept all)' : opts.no ? '--no (decline all)' : process.stdin.isTTY ? 'asked at the terminal' : 'read from stdin'}`,
  );
  say(`  timers:    timeout ${TIMEOUT_MS} ms (reset by progress), silence watchdog ${SILENCE_MS} ms`);
  await client.connect(transport);
  const info = client.getServerVersion();
  say(`  server:    ${info?.name} ${info?.version}, protocol ${negotiatedVersion() ?? '?'}`);

  const call = (
    name: string,
    args: Record<string, unknown>,
    o: { onProgress?: (p: ProgressReport) => void; signal?: AbortSignal } = {},
  ) =>
    tc.callTool(name, args, {
      ...o,
      signal: o.signal ? AbortSignal.any([o.signal, interrupt.signal]) : interrupt.signal,
    });

  await step('tools/list', [], async () => {
    tools = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
    for (const t of tools.values()) {
      if (only && !only.has(t.name)) continue;
      const hints = [t.annotations?.destructiveHint && 'destructive', t.annotations?.readOnlyHint && 'read-only']
        .filter(Boolean)
        .join(', ');
      say(`  ${t.name.padEnd(36)} ${paint('gray', hints)}`);
    }
    return verdict(tools.size > 0, `${tools.size} tools`, 'no tools');
  });

  await step('report.generate: progress from an async generator', ['report.generate'], async () => {
    const view = new ProgressView('report');
    const t0 = Date.now();
    const r = await call('report.generate', { rows: 8, delayMs: 150 }, { onProgress: view.update }).finally(() =>
      view.stop(),
    );
    say(`  result (${Date.now() - t0} ms): ${textOf(r)}`);
    return verdict(
      !r.isError && view.updates.length > 0 && view.strictlyIncreasing,
      `${view.updates.length} progress notifications, strictly increasing`,
      view.updates.length ? 'progress went backwards' : 'no progress notifications (progress middleware missing?)',
    );
  });

  await step('progress.flood: 100 000 iterations, throttled', ['progress.flood'], async () => {
    const view = new ProgressView('flood ');
    const r = await call('progress.flood', { iterations: 100_000 }, { onProgress: view.update }).finally(() =>
      view.stop(),
    );
    say(`  result: ${textOf(r)} iterations → ${view.updates.length} progress notifications on the wire`);
    return verdict(
      textOf(r) === '100000' &&
        view.updates.length > 0 &&
        view.updates.length <= 150 &&
        view.updates.at(-1)?.progress === 100_000,
      'throttled: a bounded number of notifications, the last one (100000) delivered before the result',
      `expected 1..~100 notifications ending at 100000, got ${view.updates.length} ending at ${view.updates.at(-1)?.progress}`,
    );
  });

  await step('job.quiet: a silent call kept alive by heartbeats', ['job.quiet'], async () => {
    const view = new ProgressView('quiet ');
    const r = await call('job.quiet', { ms: 3_000 }, { onProgress: view.update }).finally(() => view.stop());
    say(`  result: ${textOf(r)}; ${view.updates.length} heartbeat(s) while the tool said nothing`);
    return verdict(
      textOf(r) === 'done' && view.updates.length > 0,
      'heartbeats arrived during the silence',
      'no heartbeat during 3 s of silence (heartbeat middleware missing?)',
    );
  });

  await step('cancellation: job.quiet {ms: 30000} cancelled after 1 s', ['job.quiet'], async () => {
    const ac = new AbortController();
    const t0 = Date.now();
    const pending = call('job.quiet', { ms: 30_000 }, { signal: ac.signal });
    setTimeout(() => ac.abort('user pressed stop'), 1_000);
    const outcome = await pending.then(
      () => 'completed',
      (e: Error) => `rejected after ${Date.now() - t0} ms: ${e.message}`,
    );
    say(`  client: ${outcome}`);
    const id = sentCalls.filter((c) => c.name === 'job.quiet').at(-1)?.id;
    await sleep(500); // anything the server still sends for that id would arrive now
    const got = id !== undefined && answered.has(id);
    say(
      `  server: ${got ? `answered request ${id}` : `sent no response for request ${id} (MCP: a cancelled request gets none)`}`,
    );
    await client.ping();
    say('  the server still answers ping');
    return verdict(
      outcome.startsWith('rejected') && !got,
      'cancelled mid-call, no late response',
      'the cancelled call was answered',
    );
  });

  await step('mutex: 10 parallel records.increment on one key', ['records.increment', 'records.get'], async () => {
    const key = `demo-${process.pid}-${Date.now()}`;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call('records.increment', { key, delayMs: 100 }).then((r) => {
          say(`  increment #${String(i + 1).padStart(2)} → ${textOf(r).padStart(2)}  (${Date.now() - t0} ms)`);
        }),
      ),
    );
    const final = Number(textOf(await call('records.get', { key })));
    say(`  records.get ${key} → ${final}`);
    return verdict(
      final === 10,
      'serialized: 10 increments, counter = 10, no lost update',
      `lost updates: counter = ${final} after 10 increments (mutex missing?)`,
    );
  });

  // Asking a person takes as long as the person: the call carries a progress token, the server's
  // heartbeat speaks for it while the question is open, and each heartbeat resets our timeout.
  await step('billing.refund: a confirmation asked mid-call', ['billing.refund'], async () => {
    const t0 = Date.now();
    let beats = 0;
    const r = await call('billing.refund', { invoiceId: 'INV-1001' }, { onProgress: () => void beats++ });
    say(`  result (${((Date.now() - t0) / 1000).toFixed(1)} s, ${beats} heartbeat(s) while waiting): ${textOf(r)}`);
    return verdict(!r.isError, 'the handler read the answer and finished', 'refund failed');
  });

  await step('account.connect: out-of-band consent (URL elicitation)', ['account.connect'], async () => {
    const r = await call('account.connect', {});
    say(`  result: ${textOf(r)}`);
    return verdict(!r.isError, 'the handler resumed after the URL step', 'connect failed');
  });

  await step('logs.emit: log lines and levels', ['logs.emit'], async () => {
    if (!client.getServerCapabilities()?.logging) return verdict(false, '', 'server does not declare logging');
    say('  logging/setLevel debug');
    await tc.setLogLevel('debug');
    let before = logs.length;
    const r = await call('logs.emit', {});
    await sleep(100);
    const all = logs.length - before;
    say('  logging/setLevel warning');
    await tc.setLogLevel('warning');
    before = logs.length;
    await call('logs.emit', {});
    await sleep(100);
    const filtered = logs.length - before;
    say(`  the tool result holds only its own text: ${JSON.stringify(textOf(r))} (logs went to the log sink)`);
    return verdict(
      all === 8 && filtered === 5,
      'debug: 8 lines; warning: 5 lines (warning and above)',
      `got ${all} then ${filtered} lines, expected 8 then 5`,
    );
  });

  // ---- corpus.reindex: work that outlives the request (@mcp-tether/jobs) ----
  const secs = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s`;
  const reindexArgs = (): Record<string, unknown> => {
    const props =
      (tools.get('corpus.reindex')?.inputSchema as { properties?: Record<string, unknown> } | undefined)?.properties ??
      {};
    return { ...('files' in props && { files: 60 }), ...('delayMs' in props && { delayMs: 50 }) };
  };
  const INLINE_HINT =
    'the server runs it inline for up to its --inline-ms, 20 000 by default; start it with --inline-ms 1000 to see a handle';
  const describeHandle = (h: JobHandle) =>
    `${h.status}${h.total ? ` ${Math.round(((h.progress ?? 0) / h.total) * 100)}%` : h.progress !== undefined ? ` ${h.progress}` : ''}${h.message ? ` (${h.message})` : ''}`;

  await step('corpus.reindex: a job handle, polled with backoff', ['corpus.reindex', 'jobs.status'], async () => {
    const t0 = Date.now();
    const seen: JobHandle[] = [];
    const r = await tc.callJob('corpus.reindex', reindexArgs(), {
      signal: interrupt.signal,
      onStatus: (h) => {
        seen.push(h);
        say(
          `  ${secs(t0)}  ${seen.length === 1 ? 'handle ' : 'jobs.status →'} ${describeHandle(h)}${h.status === 'working' ? `; next poll in ${h.pollAfterMs} ms` : ''}`,
        );
      },
    });
    say(`  result: ${textOf(r)}`);
    const waits = seen.filter((h) => h.status === 'working').map((h) => h.pollAfterMs);
    if (seen.length <= 1)
      return verdict(
        !r.isError,
        `finished inline, before the server turned it into a job (${INLINE_HINT})`,
        'reindex failed',
      );
    return verdict(
      !r.isError && seen.at(-1)?.status === 'completed' && waits.every((w, i) => i === 0 || w >= waits[i - 1]!),
      `followed ${seen.length - 1} poll(s) at the server's pollAfterMs (${waits.join(' → ')} ms) to the result`,
      'the job did not complete',
    );
  });

  await step('corpus.reindex: partial output by subscription', ['corpus.reindex', 'jobs.status'], async () => {
    const t0 = Date.now();
    let lines = 0;
    let reads = 0;
    let handles = 0;
    const r = await tc.callJob('corpus.reindex', reindexArgs(), {
      signal: interrupt.signal,
      onStatus: () => void handles++,
      partial: 'subscribe',
      onPartial: (text) => {
        reads++;
        const got = text.split('\n').filter(Boolean);
        lines += got.length;
        if (reads <= 3 || got.length === 0)
          say(`  ${secs(t0)}  +${got.length} line(s): ${got.slice(0, 3).join(', ')}${got.length > 3 ? ', …' : ''}`);
      },
    });
    say(`  result: ${textOf(r)}`);
    say(`  partial output: ${lines} line(s) in ${reads} read(s)`);
    const subscribed = Boolean(client.getServerCapabilities()?.resources?.subscribe);
    if (handles === 0)
      return verdict(
        !r.isError,
        `finished inline: no job, so no partial output to read (${INLINE_HINT})`,
        'reindex failed',
      );
    return verdict(
      !r.isError && lines > 0,
      `${subscribed ? 'resources/subscribe: read on each resources/updated' : 'no resources/subscribe on this server: read at each poll'}`,
      r.isError ? 'reindex failed' : 'no partial output',
    );
  });

  await step('corpus.reindex: as an MCP task (2025-11-25)', ['corpus.reindex'], async () => {
    const tool = tools.get('corpus.reindex') as (Tool & { execution?: { taskSupport?: string } }) | undefined;
    const support = tool?.execution?.taskSupport;
    if (!client.getServerCapabilities()?.tasks || !support || support === 'forbidden') {
      say(
        paint('yellow', '  skipped: the server offers no task for corpus.reindex (no tasks capability or taskSupport)'),
      );
      return 'skipped';
    }
    const t0 = Date.now();
    const r = await tc.callTask('corpus.reindex', reindexArgs(), {
      signal: interrupt.signal,
      onStatus: (t) =>
        say(
          `  ${secs(t0)}  task ${t.status}${t.statusMessage ? ` (${t.statusMessage})` : ''}${t.status === 'working' && t.pollIntervalMs ? `; next tasks/get in ${t.pollIntervalMs} ms` : ''}`,
        ),
    });
    say(`  result: ${textOf(r)}`);
    if (jobHandleOf(r))
      return verdict(
        false,
        '',
        'the task ended with a job handle instead of the result (the server ran a job inside the task)',
      );
    return verdict(!r.isError, 'tasks/get at the task pollInterval, then tasks/result', 'the task failed');
  });

  say();
  say(paint('bold', '── summary ' + '─'.repeat(62)));
  for (const r of results) {
    const mark =
      r.result === 'ok' ? paint('green', '✓') : r.result === 'skipped' ? paint('yellow', '-') : paint('red', '✗');
    say(`  ${mark} ${r.title}${r.note ? paint('gray', `  (${r.note})`) : ''}`);
  }
  const failed = results.filter((r) => r.result === 'failed').length;
  const skipped = results.filter((r) => r.result === 'skipped').length;
  say(`  ${results.length - failed - skipped} ok, ${skipped} skipped, ${failed} failed`);
  await cleanup();
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    if (interrupt.signal.aborted) return; // onInterrupt exits with 130
    console.error(isCallAborted(err) ? `demo-client: ${err.message}` : err);
    process.exit(1);
  },
);
