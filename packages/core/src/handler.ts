import type { CallContext } from './types.js';

/** What a tool handler may produce: a result, a promise of one, or an async generator returning one. */
export type HandlerOutput<R> = R | Promise<R> | AsyncGenerator<unknown, R, undefined>;

/**
 * The result type the SDK sees. A handler that may return an `input_required` outcome (core shape:
 * `requestState` is any JSON until @mcp-tether/mrtr seals it) is typed `any` for the SDK, since
 * neither SDK's callback type describes that outcome; other results keep their type.
 */
export type SdkFacingResult<R> = R extends { resultType: 'input_required' } ? any : R;

/**
 * Type helper for tool callbacks: types the second argument as the tether {@link CallContext} and
 * allows async generators, while keeping the SDK's argument inference from `inputSchema`. At run
 * time it returns `fn` unchanged (the wrapping happens in `tether()`). Works with `registerTool` of
 * both SDK lines (v1: zod raw shape; v2: `z.object(...)` or a raw shape).
 *
 * Give every tool an `inputSchema` (`{}` when it takes no arguments) so the SDK passes
 * `(args, ctx)`; without one, the SDK passes the context as the only argument.
 *
 * ```ts
 * server.registerTool('report', { inputSchema: { rows: z.number() } }, handler(async function* (args, ctx) {
 *   yield progress(50, 'half way');
 *   return { content: [{ type: 'text', text: String(args.rows) }] };
 * }));
 * ```
 */
export function handler<A, R>(fn: (args: A, ctx: CallContext) => HandlerOutput<R>): (args: A, extra: any) => Promise<SdkFacingResult<R>> {
  return fn as never;
}
