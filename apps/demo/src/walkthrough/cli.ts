/**
 * The walkthrough client's command line and terminal: its options (`--url`, `--yes`/`--no`,
 * `--only`, `--timeout-ms`, `--silence-ms`; bad usage exits 2), how it prints (`say`, `paint`:
 * styled only on a terminal), and Ctrl+C (every call in flight cancelled, every question withdrawn,
 * exit 130; a second Ctrl+C leaves at once). Read at import: `client.ts` imports it first.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, styleText } from 'node:util';

const USAGE = `usage: demo-client [--url URL] [--yes | --no] [--only TOOLS] [--timeout-ms N] [--silence-ms N]

  --url URL        drive a running server (default: spawn the demo over stdio)
  --yes            accept every confirmation without asking
  --no             decline every confirmation without asking
  --only TOOLS     run only the steps of these tools (comma-separated, e.g. billing.refund)
  --timeout-ms N   request timeout, reset by each progress notification (default 60000)
  --silence-ms N   give up on a call after N ms with neither progress nor result (default 30000)

  Without --yes/--no, questions are asked at the terminal (or read line by line from piped
  stdin; at the end of the input the remaining questions are declined). Ctrl+C stops at once.`;

let opts: {
  url?: string;
  yes: boolean;
  no: boolean;
  help: boolean;
  only?: string;
  'timeout-ms'?: string;
  'silence-ms'?: string;
};
try {
  opts = parseArgs({
    options: {
      url: { type: 'string' },
      yes: { type: 'boolean', default: false },
      no: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
      only: { type: 'string' },
      'timeout-ms': { type: 'string' },
      'silence-ms': { type: 'string' },
    },
    strict: true,
  }).values as typeof opts;
} catch (err) {
  console.error(`${(err as Error).message}\n\n${USAGE}`);
  process.exit(2);
}
export { opts };
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
const usage = (message: string): never => {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
};
if (opts.yes && opts.no) usage('--yes and --no exclude each other');
const msOption = (name: 'timeout-ms' | 'silence-ms', fallback: number) => {
  const raw = opts[name];
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) usage(`--${name} must be a whole number of ms, got ${JSON.stringify(raw)}`);
  return Number(raw);
};
export const TIMEOUT_MS = msOption('timeout-ms', 60_000);
export const SILENCE_MS = msOption('silence-ms', 30_000);
export const only = opts.only
  ? new Set(
      opts.only
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
  : undefined;

export const tty = Boolean(process.stdout.isTTY);
export const ask = !opts.yes && !opts.no;
export type Style = Parameters<typeof styleText>[0];
export const paint = (style: Style, s: string) => (tty ? styleText(style, s) : s);
export const say = (s = '') => console.log(s);

// ---------------------------------------------------------------- Ctrl+C: stop at once

/** Aborted at Ctrl+C: every call in flight is cancelled (notifications/cancelled) and every question withdrawn. */
export const interrupt = new AbortController();
let cleanupFn: () => Promise<void> = async () => {};
/** What Ctrl+C and the end of the walkthrough run (close the answers and the connection; set by `main`). */
export function setCleanup(fn: () => Promise<void>): void {
  cleanupFn = fn;
}
export function cleanup(): Promise<void> {
  return cleanupFn();
}
/** When we raised SIGINT in our own process group (see below); the copy that comes back is not a second Ctrl+C. */
let raisedAt = -Infinity;
export function onInterrupt(fromReadline = false): void {
  if (interrupt.signal.aborted) {
    if (Date.now() - raisedAt < 1_000) return; // our own SIGINT, or a parent relaying it
    process.exit(130); // second Ctrl+C: leave now
  }
  say();
  say(paint('yellow', '  ^C interrupted: cancelling what is in flight and stopping the walkthrough'));
  interrupt.abort(new Error('interrupted (Ctrl+C)'));
  // A terminal in raw mode (readline at a prompt) gives Ctrl+C to us as a key, not as a signal to
  // the foreground process group. Raise the signal the terminal would have, so that whatever runs
  // us (npm run, pnpm, tsx) and the server we spawned stop as on any Ctrl+C.
  if (fromReadline && process.platform !== 'win32') {
    raisedAt = Date.now();
    try {
      process.kill(0, 'SIGINT');
    } catch {
      /* no process group to signal */
    }
  }
  // Let the cancel notifications leave (printed by the tap), then close the connection and go.
  const force = setTimeout(() => process.exit(130), 2_000);
  force.unref();
  void sleep(100)
    .then(() => cleanup())
    .catch(() => {})
    .finally(() => process.exit(130));
}
process.on('SIGINT', () => onInterrupt());
