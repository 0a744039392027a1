/**
 * The walkthrough client's answers to the server's questions (elicitation): a readline prompt on a
 * terminal, or the next line of piped stdin; each form field asked until valid (`decline` declines
 * the form), URL-mode consent confirmed with Enter, `--yes`/`--no` answering without asking, and a
 * question the server withdraws (its request cancelled) or the end of the input ending the form.
 */
import { createInterface, type Interface } from 'node:readline';
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { ask, interrupt, onInterrupt, opts, paint, say } from './cli.js';

/** Reads answers: a readline prompt on a terminal, or the next line of piped stdin (queued, so lines sent early are kept). */
class Answers {
  private rl: Interface | undefined;
  private lines: string[] = [];
  private waiting: ((line: string | undefined) => void) | undefined;
  private ended = false;

  private open(): Interface {
    if (this.rl) return this.rl;
    const rl = createInterface({
      input: process.stdin,
      output: process.stdout,
      terminal: Boolean(process.stdin.isTTY),
    });
    rl.on('line', (line) => {
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = undefined;
        w(line);
      } else this.lines.push(line);
    });
    rl.on('close', () => {
      this.ended = true;
      this.waiting?.(undefined);
      this.waiting = undefined;
    });
    // A terminal in raw mode hands Ctrl+C to readline instead of raising SIGINT.
    rl.on('SIGINT', () => onInterrupt(true));
    this.rl = rl;
    return rl;
  }

  /** The trimmed answer, or `undefined` at the end of the input. Rejects when `signal` aborts. */
  question(prompt: string, signal: AbortSignal): Promise<string | undefined> {
    const rl = this.open();
    if (signal.aborted) return Promise.reject(signal.reason);
    if (process.stdin.isTTY) {
      rl.setPrompt(prompt);
      rl.prompt();
    } else process.stdout.write(prompt);
    if (this.lines.length) return Promise.resolve(this.lines.shift()!.trim());
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiting = undefined;
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting = (line) => {
        signal.removeEventListener('abort', onAbort);
        resolve(line?.trim());
      };
      rl.resume();
    });
  }

  close(): void {
    this.rl?.close();
  }
}
export const answers = new Answers();

class Withdrawn extends Error {}
class EndOfInput extends Error {}

/** Ask until the answer is valid; `parse` returns undefined for an invalid answer (then `hint` is shown). */
async function askValid<T>(
  prompt: string,
  parse: (a: string) => T | undefined,
  hint: string,
  signal: AbortSignal,
): Promise<T | 'decline'> {
  for (;;) {
    const a = await answers.question(prompt, signal).catch((e) => {
      throw interrupt.signal.aborted ? e : new Withdrawn(String(e));
    });
    if (a === undefined) throw new EndOfInput();
    if (!process.stdin.isTTY) say(a); // piped input is not echoed: show it, so the transcript reads like a terminal
    if (/^decline$/i.test(a)) return 'decline';
    const v = parse(a);
    if (v !== undefined) return v;
    say(paint('yellow', `    ${hint}`));
  }
}

/** Questions on screen now. */
let openQuestions = 0;
export function questionsOnScreen(): number {
  return openQuestions;
}
export async function answerElicitation(
  params: ElicitRequest['params'],
  requestSignal: AbortSignal,
): Promise<ElicitResult> {
  openQuestions++;
  try {
    return await askUser(params, requestSignal);
  } finally {
    openQuestions--;
  }
}

async function askUser(params: ElicitRequest['params'], requestSignal: AbortSignal): Promise<ElicitResult> {
  const signal = AbortSignal.any([requestSignal, interrupt.signal]);
  say(paint('magenta', `  ? server asks: ${params.message}`));
  if (params.mode === 'url') {
    say(`    open this URL to continue: ${paint('underline', String(params.url))}`);
    if (opts.yes) return (say('    (--yes: pretending the consent screen was completed)'), { action: 'accept' });
    if (opts.no) return (say('    (--no: declining)'), { action: 'decline' });
  } else if (!ask) {
    say(`    (${opts.no ? '--no' : '--yes'}: ${opts.no ? 'declining' : 'accepting'})`);
    if (opts.no) return { action: 'decline' };
  } else {
    say(paint('gray', "    (answer each field; 'decline' declines the form, Ctrl+C stops the walkthrough)"));
  }
  try {
    if (params.mode === 'url') {
      const a = await askValid(
        '    press Enter when done, or type n to decline: ',
        (s) => (s === '' || /^y(es)?$/i.test(s) ? 'done' : /^no?$/i.test(s) ? 'n' : undefined),
        'press Enter when done, or type n',
        signal,
      );
      return a === 'done' ? { action: 'accept' } : { action: 'decline' };
    }
    const schema = params.requestedSchema as {
      properties?: Record<string, { type?: string; description?: string; default?: unknown; enum?: unknown[] }>;
    };
    const content: Record<string, string | number | boolean | string[]> = {};
    for (const [key, f] of Object.entries(schema.properties ?? {})) {
      const label = f.description ?? key;
      if (opts.yes) {
        content[key] =
          f.type === 'boolean'
            ? true
            : ((f.default as string | number | undefined) ?? (f.enum?.[0] as string | undefined) ?? '');
        say(`    ${label}: ${JSON.stringify(content[key])}  (--yes)`);
        continue;
      }
      let v: string | number | boolean | 'decline';
      if (f.type === 'boolean') {
        v = await askValid(
          `    ${label} [y/n]: `,
          (s) => (/^y(es)?$/i.test(s) ? true : /^no?$/i.test(s) ? false : undefined),
          'please answer y or n',
          signal,
        );
      } else if (f.type === 'number' || f.type === 'integer') {
        const int = f.type === 'integer';
        v = await askValid(
          `    ${label}${f.default !== undefined ? ` [${String(f.default)}]` : ''}: `,
          (s) =>
            s === '' && typeof f.default === 'number'
              ? f.default
              : s !== '' && Number.isFinite(Number(s)) && (!int || Number.isInteger(Number(s)))
                ? Number(s)
                : undefined,
          `please enter ${int ? 'a whole number' : 'a number'}`,
          signal,
        );
      } else if (f.enum) {
        const values = f.enum.map(String);
        v = await askValid(
          `    ${label} (${values.join('/')}): `,
          (s) => (values.includes(s) ? s : s === '' && f.default !== undefined ? String(f.default) : undefined),
          `please answer one of ${values.join(', ')}`,
          signal,
        );
      } else {
        v = await askValid(
          `    ${label}${f.default !== undefined ? ` [${String(f.default)}]` : ''}: `,
          (s) => (s === '' ? (f.default as string | undefined) : s),
          'please enter a value',
          signal,
        );
      }
      if (v === 'decline') return (say('    declined'), { action: 'decline' });
      content[key] = v;
    }
    return { action: 'accept', content };
  } catch (err) {
    if (err instanceof EndOfInput) return (say(), say('    (end of input: declining)'), { action: 'decline' });
    if (err instanceof Withdrawn)
      return (say(), say(paint('yellow', '    (the server withdrew the question)')), { action: 'cancel' });
    throw err;
  }
}
