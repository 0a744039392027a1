/**
 * Who the client is, for quotas and rate limits: the agreement between a transport front (e.g.
 * `@mcp-tether/http`) that knows the client and the adapters that fill {@link CallContext.clientKey}.
 * Core owns it; a front imports these names, never a copy of the string.
 */

/**
 * Key in the SDK's `AuthInfo.extra` under which a transport front conveys the client key it
 * computed (a non-empty string, e.g. `ip:203.0.113.7`). The adapters read it into
 * `ctx.clientKey` / `info.clientKey` when there is no principal.
 */
export const CLIENT_KEY_EXTRA = 'io.github.mcp-tether/clientKey';

/** The part of the SDK's `AuthInfo` the adapters read (the SDK passes it as `extra.authInfo` / `ctx.http.authInfo`). */
export interface AuthInfoLike {
  clientId?: string;
  extra?: Record<string, unknown>;
}

/** Principal and client key of one request, as {@link identityOf} reads them. */
export interface ClientIdentity {
  /** The authenticated principal (`AuthInfo.clientId`), when there is one. */
  readonly principal: string | undefined;
  /** The principal, else the key the transport conveyed under {@link CLIENT_KEY_EXTRA}, else undefined. */
  readonly clientKey: string | undefined;
}

const NOBODY: ClientIdentity = Object.freeze({ principal: undefined, clientKey: undefined });

/**
 * Read principal and client key from the SDK's `AuthInfo` of one request.
 *
 * - `clientId` a non-empty string: that is the principal, and the client key.
 * - otherwise (`clientId: ''`, the form a front uses when nobody authenticated): no principal; the
 *   client key is `extra[CLIENT_KEY_EXTRA]` when it is a non-empty string.
 * - no `AuthInfo` (stdio, in-memory, a transport that knows nothing): both undefined.
 */
export function identityOf(authInfo: AuthInfoLike | undefined): ClientIdentity {
  if (authInfo === undefined || authInfo === null) return NOBODY;
  const id = authInfo.clientId;
  if (typeof id === 'string' && id !== '') return { principal: id, clientKey: id };
  const key = authInfo.extra?.[CLIENT_KEY_EXTRA];
  return typeof key === 'string' && key !== '' ? { principal: undefined, clientKey: key } : NOBODY;
}

/**
 * The SDK `AuthInfo` a front passes for a request nobody authenticated but whose client it knows
 * (`clientId: ''` means "no principal"; {@link identityOf} reads it back).
 * @param clientKey non-empty client key (e.g. `ip:203.0.113.7`, `session:<id>`).
 */
export function anonymousAuthInfo(clientKey: string): {
  token: string;
  clientId: string;
  scopes: string[];
  extra: Record<string, unknown>;
} {
  return { token: '', clientId: '', scopes: [], extra: { [CLIENT_KEY_EXTRA]: clientKey } };
}
