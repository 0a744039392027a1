import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cwd = fileURLToPath(new URL('..', import.meta.url));

/** A child process serving HTTP on a loopback port it printed as `listening <port>`. */
export interface Replica {
  readonly port: number;
  readonly child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Start `node --import tsx <fixture> ...args` and wait (at most 20 s) for its `listening <port>` line. */
export async function spawnReplica(
  fixture: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Replica> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL(`./fixtures/${fixture}`, import.meta.url)), ...args],
    {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  live.add(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${fixture} did not start within 90 s:\n${out}`)), 90_000);
    const onData = () => {
      const m = /listening (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${fixture} exited (${code}) before listening:\n${out}`));
    });
  });
  return {
    port,
    child,
    output: () => out,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      const force = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await gone;
      clearTimeout(force);
      live.delete(child);
    },
  };
}

/** One SSE event. */
export interface SseEvent {
  id?: string;
  data: any;
}

/**
 * Read SSE events from a fetch response until `stop(event)` says so (or `timeoutMs` passes); then
 * cancel the body (the client goes away).
 */
export async function readSse(
  res: Response,
  stop: (event: SseEvent, all: SseEvent[]) => boolean,
  timeoutMs = 10_000,
): Promise<SseEvent[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buf = '';
  const timer = setTimeout(() => void reader.cancel(), timeoutMs);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return events;
      buf += decoder.decode(value, { stream: true });
      for (let cut = buf.indexOf('\n\n'); cut >= 0; cut = buf.indexOf('\n\n')) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('id:')) id = line.slice(3).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
        }
        if (data.length === 0 || data.join('') === '') continue; // priming or keep-alive
        const event: SseEvent = { ...(id !== undefined && { id }), data: JSON.parse(data.join('\n')) };
        events.push(event);
        if (stop(event, events)) {
          await reader.cancel();
          return events;
        }
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** POST one JSON-RPC message; returns the response. */
export function post(url: string, message: object, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify(message) });
}
