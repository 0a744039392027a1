/**
 * A raw stdio client for byte-level tests: spawns a server process, writes exactly the bytes you
 * give it (invalid JSON, oversized or split lines, any id), and reads what the server writes as JSON
 * lines. Use {@link connectStdio} for an SDK client instead.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

/** A spawned stdio server driven with raw lines (see {@link spawnStdio}). */
export interface RawStdio {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every JSON message the server wrote, in order. */
  readonly messages: Record<string, any>[];
  /** Lines of stdout that were not JSON (a stdio server must write none). */
  readonly garbage: string[];
  stderr(): string;
  /** Write raw text (a newline is NOT added). */
  write(text: string | Buffer): Promise<void>;
  /** Write one message (or raw text) as a line. */
  send(message: unknown): Promise<void>;
  /** The first response with this id written after index `from` (default 0). */
  response(id: string | number | null, timeoutMs?: number, from?: number): Promise<Record<string, any>>;
  /** The first message written at index `from` or later. */
  next(from: number, timeoutMs?: number): Promise<Record<string, any>>;
  /** Send a request and wait for its response. */
  request(id: string | number, method: string, params?: unknown, timeoutMs?: number): Promise<Record<string, any>>;
  /** Resolves with the exit code when the process exits (at most `timeoutMs` ms, else rejects). */
  exited(timeoutMs?: number): Promise<number | null>;
  /** SIGKILL the process if it still runs. */
  kill(): void;
}

/** Options of {@link spawnStdio}. */
export interface SpawnStdioOptions {
  cwd?: string;
  env?: Record<string, string>;
  /**
   * Open a 2025-era session first (`initialize` with this protocol version, then
   * `notifications/initialized`); `false` to start with nothing sent. Default `'2025-06-18'`.
   */
  initialize?: string | false;
}

/**
 * Spawn `command args` and talk to it over stdio with raw lines. Each wait rejects after its
 * timeout (in ms) with the end of the process's stderr in the message. Call `kill()` when done.
 * @throws (rejects) if `initialize` is not answered with a result within 20 s
 */
export async function spawnStdio(command: string, args: string[], options: SpawnStdioOptions = {}): Promise<RawStdio> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ? { ...process.env, ...options.env } : process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out = collect(child);
  const write = (text: string | Buffer) =>
    new Promise<void>((resolve, reject) => {
      child.stdin.write(text, (e) => (e ? reject(e) : resolve()));
    });
  const { messages, waitFor } = out;
  const raw: RawStdio = {
    child,
    messages,
    garbage: out.garbage,
    stderr: () => out.err,
    write,
    send: (m) => write(`${typeof m === 'string' ? m : JSON.stringify(m)}\n`),
    response: (id, timeoutMs = 90_000, from = 0) =>
      waitFor(
        () => messages.slice(from).find((m) => 'id' in m && m.id === id && ('result' in m || 'error' in m)),
        timeoutMs,
        `a response to ${JSON.stringify(id)}`,
      ),
    next: (from, timeoutMs = 90_000) => waitFor(() => messages[from], timeoutMs, `message #${from}`),
    request: async (id, method, params, timeoutMs) => {
      const from = messages.length;
      await raw.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
      return raw.response(id, timeoutMs, from);
    },
    exited: (timeoutMs = 90_000) =>
      waitFor(
        () => (out.exitCode === undefined ? undefined : { code: out.exitCode }),
        timeoutMs,
        'the process to exit',
      ).then((r) => r.code),
    kill: () => {
      if (out.exitCode === undefined) child.kill('SIGKILL');
    },
  };
  child.stdin.on('error', () => {}); // writes after the process exited: reported by exited()
  const version = options.initialize === undefined ? '2025-06-18' : options.initialize;
  if (version !== false) await initialize(raw, version);
  return raw;
}

/** What a child wrote (stdout lines parsed, or kept as garbage; stderr) and how it ended, with waits on them. */
interface Collected {
  readonly messages: Record<string, any>[];
  readonly garbage: string[];
  /** stderr so far. */
  err: string;
  exitCode: number | null | undefined;
  /** Resolves with `check()`'s first defined value, checked now and on each output or the exit; rejects after `timeoutMs`. */
  waitFor<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T>;
}

function collect(child: ChildProcessWithoutNullStreams): Collected {
  let rest = '';
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const out: Collected = {
    messages: [],
    garbage: [],
    err: '',
    exitCode: undefined,
    waitFor: <T>(check: () => T | undefined, timeoutMs: number, what: string) =>
      new Promise<T>((resolve, reject) => {
        const tryIt = () => {
          const v = check();
          if (v === undefined) return false;
          waiters.delete(tryIt);
          clearTimeout(timer);
          resolve(v);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(tryIt);
          reject(new Error(`timed out waiting for ${what}; stderr: ${out.err.slice(-2000)}`));
        }, timeoutMs);
        if (!tryIt()) waiters.add(tryIt);
      }),
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    rest += chunk;
    for (let nl = rest.indexOf('\n'); nl !== -1; nl = rest.indexOf('\n')) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      try {
        out.messages.push(JSON.parse(line));
      } catch {
        out.garbage.push(line);
      }
    }
    wake();
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (c: string) => {
    out.err += c;
    wake();
  });
  child.on('exit', (code) => {
    out.exitCode = code;
    wake();
  });
  return out;
}

/** Open a 2025-era session: `initialize` (answered within 20 s), then `notifications/initialized`; the child is killed on failure. */
async function initialize(raw: RawStdio, version: string): Promise<void> {
  try {
    const init = await raw.request(
      'init',
      'initialize',
      { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      20_000,
    );
    if (!init.result) throw new Error(`initialize failed: ${JSON.stringify(init)}`);
    await raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  } catch (err) {
    raw.kill();
    throw err;
  }
}
