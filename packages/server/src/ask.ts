/**
 * Asking the user in one expression: `ctx.confirm(message)` and `ctx.ask(message, fields)`, on top
 * of `@mcp-tether/mrtr`. A question without an answer yet ends this run of the handler (a throw the
 * preset's wrapper turns into mrtr's `input_required` outcome); mrtr asks (an `elicitation/create`
 * on 2025-era sessions, an `input_required` result on 2026-07-28 requests) and runs the handler
 * again from the top, where the same expression now returns the answer.
 */
import type { CallContext, InputRequiredResult, Middleware } from '@mcp-tether/core';
import { ask, type Fields, type Infer, readInputResult, requireInput } from '@mcp-tether/mrtr';

declare module '@mcp-tether/core' {
  interface CallContext {
    /**
     * Ask the user for a form (`@mcp-tether/mrtr` field descriptors, e.g. `{ name: ask.string('Name') }`)
     * and return the validated answer; `undefined` when the user declined or cancelled. Until the
     * user answered, the handler stops here (it runs again from the top with the answer: keep the
     * code before the question free of side effects). Installed by `@mcp-tether/server` for its
     * tools; the n-th question of a run is keyed `ask-n` unless `options.key` is given.
     * @throws the pending question (caught by the preset's tool wrapper; do not catch it yourself)
     */
    ask<F extends Fields>(message: string, fields: F, options?: { key?: string }): Infer<F> | undefined;
    /**
     * Ask a yes/no question: `true` only when the user accepted and answered yes; `false` on no,
     * decline or cancel. Keyed `confirm-n` (the n-th confirmation of a run) unless `options.key`.
     * @throws the pending question (caught by the preset's tool wrapper)
     */
    confirm(message: string, options?: { key?: string }): boolean;
  }
}

/** A question with no answer yet, thrown out of the handler and served by the tool wrapper. */
export class AskPending extends Error {
  constructor(readonly outcome: InputRequiredResult) {
    super('a question to the user is pending (served by @mcp-tether/server; do not catch this error)');
    this.name = 'AskPending';
  }
}

const COUNTS = Symbol('mcp-tether.server.askCounts');

/** Start a new run of the handler: question numbering starts again (called by the tool wrapper). */
export function newRun(ctx: CallContext): void {
  ctx.state.set(COUNTS, { ask: 0, confirm: 0 });
}

function nextKey(ctx: CallContext, kind: 'ask' | 'confirm'): string {
  let counts = ctx.state.get(COUNTS) as { ask: number; confirm: number } | undefined;
  if (!counts) {
    counts = { ask: 0, confirm: 0 };
    ctx.state.set(COUNTS, counts);
  }
  return `${kind}-${++counts[kind]}`;
}

function askOf(ctx: CallContext) {
  return <F extends Fields>(message: string, fields: F, options?: { key?: string }): Infer<F> | undefined => {
    const key = options?.key ?? nextKey(ctx, 'ask');
    const answer = readInputResult(key, ctx);
    if (!answer) throw new AskPending(requireInput.elicit(message, fields, { key }));
    return answer.action === 'accept' ? (answer.content as Infer<F>) : undefined;
  };
}

const YES = { confirm: ask.boolean('Yes') };

function confirmOf(ctx: CallContext) {
  return (message: string, options?: { key?: string }): boolean => {
    const key = options?.key ?? nextKey(ctx, 'confirm');
    const answer = readInputResult(key, ctx);
    if (!answer) throw new AskPending(requireInput.elicit(message, YES, { key }));
    return answer.action === 'accept' && (answer.content as { confirm?: unknown }).confirm === true;
  };
}

/** The middleware that gives calls `ctx.ask` and `ctx.confirm` (it handles nothing itself). */
export function askFields(): Middleware {
  return { name: 'ask', fields: { ask: askOf, confirm: confirmOf } };
}
