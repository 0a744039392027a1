/**
 * @mcp-tether/redis/testing — start a real `redis-server` for tests: a free loopback port, no
 * persistence (`--save '' --appendonly no`), bounded waits, stopped with the test process.
 * @packageDocumentation
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, Socket } from 'node:net';

/** A running `redis-server` of a test. */
export interface TestRedis {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Stop it (SIGTERM, then SIGKILL after 2 s). Idempotent. */
  stop(): Promise<void>;
  /** Stop it and start a fresh, empty one on the same port (a Redis restart: every key is gone). */
  restart(): Promise<void>;
  /** Stop it now, without waiting (SIGKILL). */
  kill(): void;
}

/** Options of {@link startRedis}. */
export interface StartRedisOptions {
  /** The binary. Default `$REDIS_SERVER` or `redis-server` on the PATH. */
  bin?: string;
  /** Port. Default: a free loopback port. */
  port?: number;
  /** Longest wait for the server to accept connections, in ms. Default 10 000. */
  readyTimeoutMs?: number;
}

/** A free TCP port on 127.0.0.1 (the OS picks it; it is free when this resolves). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const live = new Set<ChildProcess>();
let exitHook = false;

/**
 * Start a `redis-server` on 127.0.0.1 (a free port unless given), without persistence, and wait
 * until it answers `PING` (at most `readyTimeoutMs`). It is killed when the test process exits.
 * @throws Error when the binary is missing or the server does not come up in time (with its output)
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const bin = options.bin ?? process.env.REDIS_SERVER ?? 'redis-server';
  const port = options.port ?? (await freePort());
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000;
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const child of live) child.kill('SIGKILL');
    });
  }
  let child: ChildProcess | undefined;

  const launch = async () => {
    const proc = spawn(
      bin,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'yes',
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child = proc;
    live.add(proc);
    let output = '';
    proc.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4_000)));
    proc.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4_000)));
    let exited: string | undefined;
    proc.once(
      'error',
      (err) => (exited = `could not start ${bin}: ${err.message} (install redis-server, or set REDIS_SERVER)`),
    );
    proc.once('exit', (code, signal) => {
      live.delete(proc);
      exited ??= `${bin} exited (${signal ?? code})`;
    });
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (exited) throw new Error(`${exited}\n${output}`);
      if (await ping(port)) return;
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`redis-server on port ${port} did not answer PING within ${readyTimeoutMs} ms\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = once(proc, 'exit');
    proc.kill('SIGTERM');
    const force = setTimeout(() => proc.kill('SIGKILL'), 2_000);
    await gone;
    clearTimeout(force);
  };

  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    async restart() {
      await stop();
      await launch();
    },
    kill() {
      child?.kill('SIGKILL');
    },
  };
}

/** One `PING` over a raw socket, at most 500 ms. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
    socket.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}
