/**
 * SIGINT/SIGTERM: one graceful shutdown, then exit 0. A second signal at least half a second
 * after the first exits at once (130 for SIGINT, 143 for SIGTERM); a repeat sooner is the same
 * interrupt relayed (`npm run` signals the whole process group, and runners such as tsx relay it
 * once more). If the shutdown hangs, the process exits 1 after the grace period plus 5 s.
 */

const REPEAT_MS = 500;
const codes = { SIGINT: 130, SIGTERM: 143 } as const;
let installed = false;

/** Install the handlers (once per process). */
export function installSignals(
  shutdown: (graceMs?: number) => Promise<void>,
  log: (line: string) => void,
  name: string,
  graceMs = 10_000,
): void {
  if (installed) return;
  installed = true;
  let first = 0;
  const on = (signal: keyof typeof codes) => {
    if (first) {
      if (Date.now() - first >= REPEAT_MS) process.exit(codes[signal]);
      return;
    }
    first = Date.now();
    log(`${name}: ${signal}, shutting down (running calls get up to ${graceMs} ms)`);
    setTimeout(() => process.exit(1), graceMs + 5_000).unref();
    shutdown().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`${name}: shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => on('SIGINT'));
  process.on('SIGTERM', () => on('SIGTERM'));
}
