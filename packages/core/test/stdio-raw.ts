/** A raw stdio client for byte-level tests: spawns a server process, writes lines, reads JSON lines. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface RawStdio {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every JSON message the server wrote, in order. */
  readonly messages: Record<string, any>[];
  /** Lines of stdout that were not JSON (must stay empty). */
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
  /** Resolves with the exit code when the process exits (at most `timeoutMs`, else rejects). */
  exited(timeoutMs?: number): Promise<number | null>;
  kill(): void;
}

const cwd = fileURLToPath(new URL('..', import.meta.url));

/** Spawn `node --import tsx <fixture> ...args` and initialize an MCP session over its stdio. */
export async function spawnRaw(fixture: string, args: string[] = [], initialize = true): Promise<RawStdio> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, ...args], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  const messages: Record<string, any>[] = [];
  const garbage: string[] = [];
  let err = '';
  let rest = '';
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    rest += chunk;
    let nl: number;
    while ((nl = rest.indexOf('\n')) !== -1) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      try {
        messages.push(JSON.parse(line));
      } catch {
        garbage.push(line);
      }
    }
    wake();
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (c: string) => {
    err += c;
    wake();
  });
  let exitCode: number | null | undefined;
  child.on('exit', (code) => {
    exitCode = code;
    wake();
  });
  const waitFor = <T>(check: () => T | undefined, timeoutMs: number, what: string) =>
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
        reject(new Error(`timed out waiting for ${what}; stderr: ${err.slice(-2000)}`));
      }, timeoutMs);
      if (!tryIt()) waiters.add(tryIt);
    });
  const write = (text: string | Buffer) =>
    new Promise<void>((resolve, reject) => {
      child.stdin.write(text, (e) => (e ? reject(e) : resolve()));
    });
  const raw: RawStdio = {
    child,
    messages,
    garbage,
    stderr: () => err,
    write,
    send: (m) => write(`${typeof m === 'string' ? m : JSON.stringify(m)}\n`),
    response: (id, timeoutMs = 10_000, from = 0) =>
      waitFor(() => messages.slice(from).find((m) => 'id' in m && m.id === id && ('result' in m || 'error' in m)), timeoutMs, `a response to ${JSON.stringify(id)}`),
    next: (from, timeoutMs = 10_000) => waitFor(() => messages[from], timeoutMs, `message #${from}`),
    request: async (id, method, params, timeoutMs) => {
      const from = messages.length;
      await raw.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
      return raw.response(id, timeoutMs, from);
    },
    exited: (timeoutMs = 10_000) => waitFor(() => (exitCode === undefined ? undefined : { code: exitCode }), timeoutMs, 'the process to exit').then((r) => r.code),
    kill: () => {
      if (exitCode === undefined) child.kill('SIGKILL');
    },
  };
  await waitFor(() => (err.includes('ready') ? true : undefined), 20_000, 'the server to start');
  if (initialize) {
    const init = await raw.request('init', 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } });
    if (!init.result) throw new Error(`initialize failed: ${JSON.stringify(init)}`);
    await raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }
  return raw;
}
