import type { CallContext, InputRequiredResult } from './types.js';

/** What a tool handler may produce: a result, a promise of one, or an async generator returning one. */
export type HandlerOutput<R> = R | Promise<R> | AsyncGenerator<unknown, R, undefined>;

/**
 * Type helper for tool callbacks: types the second argument as the tether {@link CallContext} and
 * allows async generators, while keeping the SDK's argument inference from `inputSchema`. At run
 * time it returns `fn` unchanged (the wrapping happens in `tether()`).
 *
 * Give every tool an `inputSchema` (`{}` when it takes no arguments) so the SDK passes
 * `(args, ctx)`; without one, the SDK passes the context as the only argument.
 *
 * The callback may also return an `input_required` outcome ({@link InputRequiredResult}, e.g.
 * `requireInput.elicit(...)` from `@mcp-tether/mrtr`). It is left out of the type the SDK sees: a
 * middleware serves it before the SDK validates the result (without one, the call is refused with
 * `INPUT_REQUIRED_UNHANDLED`).
 *
 * ```ts
 * server.registerTool('report', { inputSchema: { rows: z.number() } }, handler(async function* (args, ctx) {
 *   yield progress(50, 'half way');
 *   return { content: [{ type: 'text', text: String(args.rows) }] };
 * }));
 * ```
 */
export function handler<A, R>(
  fn: (args: A, ctx: CallContext) => HandlerOutput<R>,
): (args: A, extra: any) => Promise<Exclude<R, InputRequiredResult>> {
  return fn as never;
}
