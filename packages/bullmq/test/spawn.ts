/** Worker processes for the tests: `node --import tsx fixtures/worker.ts …`, killed with the test process. */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cwd = fileURLToPath(new URL('..', import.meta.url));
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** A worker child process. */
export interface Child {
  readonly pid: number;
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal) once it exited. */
  readonly exited: Promise<number | NodeJS.Signals>;
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
}

/** Start `fixtures/<fixture>` with `args`; resolves once it printed `listening` (at most 180 s). */
export async function spawnChild(fixture: string, args: string[]): Promise<Child> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL(`./fixtures/${fixture}`, import.meta.url)), ...args],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  live.add(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(code ?? signal ?? -1);
    }),
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${fixture} did not start within 180 s:\n${out}`)), 180_000);
    const onData = () => {
      if (!/listening/.test(out)) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve();
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${fixture} exited (${code}) before it was ready:\n${out}`));
    });
  });
  return {
    pid: child.pid!,
    child,
    output: () => out,
    exited,
    signal: (s) => void child.kill(s),
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Poll `get` every 25 ms until `ok` (at most `timeoutMs`), then return the value. */
export async function until<T>(
  what: string,
  get: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
