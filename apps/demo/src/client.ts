#!/usr/bin/env node
/**
 * The walkthrough client: drives every demo tool with a real SDK client and prints a transcript.
 *
 *   npm run demo:client                              spawn the demo over stdio
 *   npm run demo:client -- --url http://127.0.0.1:3000/mcp
 *   npm run demo:client -- --yes | --no             answer confirmations without asking
 *
 * Exit code 0 when every step behaved as the demo promises, 1 otherwise.
 */
import { createInterface } from 'node:readline/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs, styleText } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
  type JSONRPCMessage,
  type LoggingLevel,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import cliProgress from 'cli-progress';

const USAGE = `usage: demo-client [--url URL] [--yes | --no]

  --url URL   drive a running server (default: spawn the demo over stdio)
  --yes       accept every confirmation without asking
  --no        decline every confirmation without asking
  (without --yes/--no: ask at the terminal; with no terminal, decline)`;

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    yes: { type: 'boolean', default: false },
    no: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
if (opts.yes && opts.no) {
  console.error(`--yes and --no exclude each other\n\n${USAGE}`);
  process.exit(2);
}

const tty = Boolean(process.stdout.isTTY);
const interactive = tty && Boolean(process.stdin.isTTY) && !opts.yes && !opts.no;
type Style = Parameters<typeof styleText>[0];
const paint = (style: Style, s: string) => (tty ? styleText(style, s) : s);
const say = (s = '') => console.log(s);
const CALL_TIMEOUT_MS = 60_000;

// ---------------------------------------------------------------- connection, wire tap

function makeTransport(): { transport: Transport; describe: string } {
  if (opts.url) return { transport: new StreamableHTTPClientTransport(new URL(opts.url)), describe: `Streamable HTTP ${opts.url}` };
  const fromSource = import.meta.url.endsWith('.ts');
  const bin = fileURLToPath(new URL(fromSource ? './bin.ts' : './bin.js', import.meta.url));
  const args = fromSource ? ['--import', import.meta.resolve('tsx'), bin, '--stdio', '--quiet'] : [bin, '--stdio', '--quiet'];
  return {
    transport: new StdioClientTransport({ command: process.execPath, args, stderr: 'inherit' }),
    describe: `stdio (spawned: node ${fromSource ? 'src/bin.ts' : 'dist/bin.js'} --stdio)`,
  };
}

/** Request ids of tools/call requests we sent, by tool name, and ids the server answered. */
const sentCalls: Array<{ id: string | number; name: string }> = [];
const answered = new Set<string | number>();
let negotiatedVersion: string | undefined;
/**
 * The progress view of the call in flight, fed from the transport tap in wire order. Why not only
 * the SDK's `onprogress`: SDK 1.x clients handle notifications a microtask late but responses at
 * once, so progress that arrives in the same chunk as the response (typically the final flush)
 * is dropped as "unknown token" (typescript-sdk #2580). `onprogress` still puts the token on the
 * request and resets the client's timeout on each notification.
 */
let activeView: ProgressView | undefined;
function tap(transport: Transport): void {
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, o) => {
    const m = message as { id?: string | number; method?: string; params?: { name?: string; _meta?: { progressToken?: string | number } } };
    if (m.method === 'tools/call' && m.id !== undefined) {
      sentCalls.push({ id: m.id, name: String(m.params?.name) });
      const token = m.params?._meta?.progressToken;
      if (activeView && activeView.token === undefined && token !== undefined) activeView.token = token;
    }
    return send(message, o);
  };
  // Protocol.connect chains an onmessage that is already set, so this runs first, in arrival order.
  transport.onmessage = (message: JSONRPCMessage) => {
    const m = message as { id?: string | number; method?: string; result?: { protocolVersion?: unknown }; params?: Record<string, unknown> };
    if (m.id !== undefined && m.method === undefined) answered.add(m.id);
    if (typeof m.result?.protocolVersion === 'string') negotiatedVersion = m.result.protocolVersion;
    if (m.method === 'notifications/progress' && activeView && m.params?.progressToken === activeView.token) {
      activeView.update(m.params as unknown as ProgressUpdate);
    }
  };
}

// ---------------------------------------------------------------- progress display

interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/** A live bar on a terminal; sampled lines otherwise (so CI logs stay short). */
class ProgressView {
  readonly updates: ProgressUpdate[] = [];
  /** The progress token of the call this view shows (bound when the request is sent). */
  token: string | number | undefined;
  private bar: cliProgress.SingleBar | undefined;
  private lastLineBucket = -1;
  private lastLineMessage: string | undefined;

  constructor(private readonly label: string) {
    activeView = this;
    if (tty) {
      this.bar = new cliProgress.SingleBar(
        { format: `  ${label} {bar} {pct} | {message}`, hideCursor: true, barsize: 30, clearOnComplete: false },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(100, 0, { pct: '  0%', message: 'waiting for progress…' });
    }
  }

  update(p: ProgressUpdate): void {
    this.updates.push(p);
    const pct = p.total ? Math.min(100, (p.progress / p.total) * 100) : undefined;
    const message = p.message ?? (p.total ? `${p.progress}/${p.total}` : `progress ${p.progress}`);
    if (this.bar) {
      this.bar.update(pct ?? 0, { pct: pct === undefined ? '  ?%' : `${pct.toFixed(0).padStart(3)}%`, message });
      return;
    }
    const bucket = pct === undefined ? -1 : Math.floor(pct / 10);
    if (bucket !== this.lastLineBucket || (p.message !== undefined && p.message !== this.lastLineMessage)) {
      say(`    ${this.label} ${pct === undefined ? '' : `${pct.toFixed(0).padStart(3)}% `}${message}`);
      this.lastLineBucket = bucket;
      this.lastLineMessage = p.message;
    }
  }

  stop(): void {
    if (activeView === this) activeView = undefined;
    this.bar?.stop();
  }

  get strictlyIncreasing(): boolean {
    return this.updates.every((u, i) => i === 0 || u.progress > this.updates[i - 1]!.progress);
  }
}

// ---------------------------------------------------------------- elicitation at the terminal

let rl: ReturnType<typeof createInterface> | undefined;
async function ask(question: string): Promise<string> {
  rl ??= createInterface({ input: process.stdin, output: process.stdout });
  return (await rl.question(question)).trim();
}

async function answerElicitation(params: ElicitRequest['params']): Promise<ElicitResult> {
  say(paint('magenta', `  ? server asks: ${params.message}`));
  if (params.mode === 'url') {
    say(`    open this URL to continue: ${paint('underline', String(params.url))}`);
    if (opts.yes) return say('    (--yes: pretending the consent screen was completed)'), { action: 'accept' };
    if (!interactive) return say(`    (${opts.no ? '--no' : 'no terminal'}: declining)`), { action: 'decline' };
    const a = await ask('    press Enter when done, or type n to decline: ');
    return /^n/i.test(a) ? { action: 'decline' } : { action: 'accept' };
  }
  const schema = params.requestedSchema as { properties?: Record<string, { type?: string; description?: string; default?: unknown; enum?: unknown[] }>; required?: string[] };
  const fields = Object.entries(schema.properties ?? {});
  if (opts.no || (!interactive && !opts.yes)) {
    say(`    (${opts.no ? '--no' : 'no terminal'}: declining; pass --yes to accept)`);
    return { action: 'decline' };
  }
  const content: Record<string, string | number | boolean | string[]> = {};
  for (const [key, f] of fields) {
    const label = f.description ?? key;
    if (opts.yes) {
      content[key] = f.type === 'boolean' ? true : ((f.default as string | number | undefined) ?? (f.enum?.[0] as string | undefined) ?? '');
      say(`    ${label}: ${JSON.stringify(content[key])}  (--yes)`);
      continue;
    }
    if (f.type === 'boolean') {
      const a = await ask(`    ${label} [y/n]: `);
      content[key] = /^y/i.test(a);
    } else {
      const hint = f.enum ? ` (${f.enum.join('/')})` : f.default !== undefined ? ` [${String(f.default)}]` : '';
      const a = (await ask(`    ${label}${hint}: `)) || String(f.default ?? '');
      content[key] = f.type === 'number' || f.type === 'integer' ? Number(a) : a;
    }
  }
  return { action: 'accept', content };
}

// ---------------------------------------------------------------- the walkthrough

type StepResult = 'ok' | 'failed' | 'skipped';
const results: Array<{ title: string; result: StepResult; note?: string }> = [];
let stepNo = 0;
let tools = new Map<string, Tool>();

const textOf = (r: CallToolResult) =>
  r.content
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text')
    .map((c) => c.text)
    .join('\n');

async function step(title: string, needs: string[], body: () => Promise<StepResult | void>): Promise<void> {
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
    say(paint('red', `  ✗ ${(err as Error).message}`));
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
  const client = new Client({ name: 'tether-demo-client', version: '0.1.0' }, { capabilities: { elicitation: { form: {}, url: {} } } });
  client.setRequestHandler(ElicitRequestSchema, (req) => answerElicitation(req.params));
  const logs: Array<{ level: LoggingLevel; logger?: string; data: unknown }> = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
    const { level, logger, data } = n.params;
    say(`    ${paint(LEVEL_STYLE[level], `[${level.padEnd(9)}]`)} ${logger ?? '-'}: ${typeof data === 'string' ? data : JSON.stringify(data)}`);
  });

  say(paint('bold', 'tether demo walkthrough'));
  say(`  transport: ${describe}`);
  say(`  answers:   ${opts.yes ? '--yes (accept all)' : opts.no ? '--no (decline all)' : interactive ? 'asked at the terminal' : 'no terminal: decline'}`);
  await client.connect(transport);
  const info = client.getServerVersion();
  say(`  server:    ${info?.name} ${info?.version}, protocol ${negotiatedVersion ?? '?'}`);

  // `progress: true` asks for progress (the SDK then sets a token) and resets the timeout on each
  // notification; what is shown comes from the tap (see activeView).
  const call = (name: string, args: Record<string, unknown>, o: { progress?: boolean; signal?: AbortSignal } = {}) =>
    client.callTool({ name, arguments: args }, CallToolResultSchema, {
      timeout: CALL_TIMEOUT_MS,
      ...(o.progress && { onprogress: () => {}, resetTimeoutOnProgress: true }),
      ...(o.signal && { signal: o.signal }),
    }) as Promise<CallToolResult>;

  await step('tools/list', [], async () => {
    tools = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
    for (const t of tools.values()) {
      const hints = [t.annotations?.destructiveHint && 'destructive', t.annotations?.readOnlyHint && 'read-only'].filter(Boolean).join(', ');
      say(`  ${t.name.padEnd(36)} ${paint('gray', hints)}`);
    }
    return verdict(tools.size > 0, `${tools.size} tools`, 'no tools');
  });

  await step('report.generate: progress from an async generator', ['report.generate'], async () => {
    const view = new ProgressView('report');
    const t0 = Date.now();
    const r = await call('report.generate', { rows: 8, delayMs: 150 }, { progress: true }).finally(() => view.stop());
    say(`  result (${Date.now() - t0} ms): ${textOf(r)}`);
    return verdict(
      !r.isError && view.updates.length > 0 && view.strictlyIncreasing,
      `${view.updates.length} progress notifications, strictly increasing`,
      view.updates.length ? 'progress went backwards' : 'no progress notifications (progress middleware missing?)',
    );
  });

  await step('progress.flood: 100 000 iterations, throttled', ['progress.flood'], async () => {
    const view = new ProgressView('flood ');
    const r = await call('progress.flood', { iterations: 100_000 }, { progress: true }).finally(() => view.stop());
    say(`  result: ${textOf(r)} iterations → ${view.updates.length} progress notifications on the wire`);
    return verdict(
      textOf(r) === '100000' && view.updates.length > 0 && view.updates.length <= 150 && view.updates.at(-1)?.progress === 100_000,
      'throttled: a bounded number of notifications, the last one (100000) flushed before the result',
      `expected 1..~100 notifications ending at 100000, got ${view.updates.length} ending at ${view.updates.at(-1)?.progress}`,
    );
  });

  await step('job.quiet: a silent call kept alive by heartbeats', ['job.quiet'], async () => {
    const view = new ProgressView('quiet ');
    const r = await call('job.quiet', { ms: 3_000 }, { progress: true }).finally(() => view.stop());
    say(`  result: ${textOf(r)}; ${view.updates.length} heartbeat(s) while the tool said nothing`);
    return verdict(textOf(r) === 'done' && view.updates.length > 0, 'heartbeats arrived during the silence', 'no heartbeat during 3 s of silence (heartbeat middleware missing?)');
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
    say(`  server: ${got ? `answered request ${id}` : `sent no response for request ${id} (MCP: a cancelled request gets none)`}`);
    await client.ping();
    say('  the server still answers ping');
    return verdict(outcome.startsWith('rejected') && !got, 'cancelled mid-call, no late response', 'the cancelled call was answered');
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
    return verdict(final === 10, 'serialized: 10 increments, counter = 10, no lost update', `lost updates: counter = ${final} after 10 increments (mutex missing?)`);
  });

  await step('billing.refund: a confirmation asked mid-call', ['billing.refund'], async () => {
    const r = await call('billing.refund', { invoiceId: 'INV-1001' });
    say(`  result: ${textOf(r)}`);
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
    await client.setLoggingLevel('debug');
    let before = logs.length;
    await call('logs.emit', {});
    await sleep(100);
    const all = logs.length - before;
    say('  logging/setLevel warning');
    await client.setLoggingLevel('warning');
    before = logs.length;
    await call('logs.emit', {});
    await sleep(100);
    const filtered = logs.length - before;
    return verdict(all === 8 && filtered === 5, 'debug: 8 lines; warning: 5 lines (warning and above)', `got ${all} then ${filtered} lines, expected 8 then 5`);
  });

  say();
  say(paint('bold', '── summary ' + '─'.repeat(62)));
  for (const r of results) {
    const mark = r.result === 'ok' ? paint('green', '✓') : r.result === 'skipped' ? paint('yellow', '-') : paint('red', '✗');
    say(`  ${mark} ${r.title}${r.note ? paint('gray', `  (${r.note})`) : ''}`);
  }
  const failed = results.filter((r) => r.result === 'failed').length;
  const skipped = results.filter((r) => r.result === 'skipped').length;
  say(`  ${results.length - failed - skipped} ok, ${skipped} skipped, ${failed} failed`);
  rl?.close();
  await client.close();
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
