/**
 * Which errors the SDK 2.x `createMcpHandler` hands its `onerror` for a request it has already
 * answered as the client's mistake (issue 26, F3). The SDK reports every refusal of its validation
 * ladder — headers that disagree with the body (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`,
 * `Mcp-Param-*`), a missing or invalid `_meta` envelope, a batch with a 2026-07-28 request, an
 * unsupported protocol version, 2025-era traffic on a modern-only endpoint — to `onerror` with a
 * stack, like a server fault; any client could then flood the operator's error log. The front
 * counts those (`stats.invalidRequests`) instead of reporting them; everything else still reaches
 * `onError`.
 *
 * The one owner of that list. The SDK's two error classes are matched by class; its ladder
 * refusals are plain `Error`s, told apart only by their message, so the prefixes below are matched
 * against the installed SDK by one wire test per message (`test/rejections.test.ts`): an SDK that
 * renames one fails those tests instead of flooding `onError` again.
 */

/** The SDK classes whose instances `createMcpHandler` reports only for requests it answered 4xx. */
export interface SdkRejectionClasses {
  /** Unsupported or missing protocol revision (HTTP 400, JSON-RPC `-32022`). */
  readonly UnsupportedProtocolVersionError: abstract new (
    ...args: never[]
  ) => Error;
  /** A request whose method needs a client capability the envelope does not declare. */
  readonly MissingRequiredClientCapabilityError: abstract new (
    ...args: never[]
  ) => Error;
}

/**
 * Message prefixes of the plain `Error`s `createMcpHandler` (SDK 2.4.0) reports right after it
 * answered a request with its ladder's rejection (HTTP 400/405, JSON-RPC `-32020`, `-32600`,
 * `-32602`, `-32022`, the request's id echoed): `Rejected inbound request (<cell>): …` for the
 * classifier, standard-header and `Mcp-Param-*` rungs, and `Rejected 2025-era request on a
 * modern-only endpoint (<cell>): …` for a front without `legacy`.
 */
export const SDK_REJECTION_PREFIXES: readonly string[] = [
  'Rejected inbound request (',
  'Rejected 2025-era request on a modern-only endpoint (',
];

/** True when `error` is the SDK reporting a client mistake it has already answered. */
export function isAnsweredRejection(error: Error, classes: SdkRejectionClasses): boolean {
  // (`as object`: the SDK's classes brand-check their instances; no narrowing of `error` wanted.)
  const value = error as object;
  if (value instanceof classes.UnsupportedProtocolVersionError) return true;
  if (value instanceof classes.MissingRequiredClientCapabilityError) return true;
  // Plain Errors only: a subclass (an SdkError, a user's error) carrying such a message is a fault.
  if (Object.getPrototypeOf(error) !== Error.prototype) return false;
  const message = error.message;
  for (const prefix of SDK_REJECTION_PREFIXES) if (message.startsWith(prefix)) return true;
  return false;
}
