/**
 * SIGINT/SIGTERM: a graceful shutdown of every app of the process (together), then exit 0. A second signal at least half a second
 * after the first exits at once (130 for SIGINT, 143 for SIGTERM); a repeat sooner is the same
 * interrupt relayed (`npm run` signals the whole process group, and runners such as tsx relay it
 * once more). If the shutdown hangs, the process exits 1 after the grace period plus 5 s.
 */

const REPEAT_MS = 500;
const codes = { SIGINT: 130, SIGTERM: 143 } as const;

interface Registered {
  readonly shutdown: () => Promise<void>;
  readonly log: (line: string) => void;
  readonly name: string;
  readonly graceMs: number;
}
const apps = new Set<Registered>();
let installed = false;

/**
 * Shut `name` down on SIGINT/SIGTERM (every app of the process registered so, together); the
 * handlers are installed once per process.
 */
export function installSignals(
  shutdown: () => Promise<void>,
  log: (line: string) => void,
  name: string,
  graceMs = 10_000,
): void {
  apps.add({ shutdown, log, name, graceMs });
  if (installed) return;
  installed = true;
  let first = 0;
  const on = (signal: keyof typeof codes) => {
    if (first) {
      if (Date.now() - first >= REPEAT_MS) process.exit(codes[signal]);
      return;
    }
    first = Date.now();
    const all = [...apps];
    const longest = Math.max(...all.map((a) => a.graceMs));
    for (const a of all) a.log(`${a.name}: ${signal}, shutting down (running calls get up to ${a.graceMs} ms)`);
    setTimeout(() => process.exit(1), longest + 5_000).unref();
    Promise.all(
      all.map((a) =>
        a.shutdown().catch((error: unknown) => {
          a.log(`${a.name}: shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
          throw error;
        }),
      ),
    ).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => on('SIGINT'));
  process.on('SIGTERM', () => on('SIGTERM'));
}
