/**
 * Who owns a job: the owner rule every front applies to a call or to a non-call request
 * (`tasks/*`, `resources/subscribe`), so that a job is found by the client that started it only.
 *
 * The rule: the principal when there is one (`p:<clientId>`); else the client key when the
 * transport conveys one (`k:<key>`; over `@mcp-tether/http` the remote address `ip:<address>` by
 * default, or what its `clientKey` option chose), so the same client follows its job from a new
 * connection; else the session (`s:<id>`) or the connection (`c:<random>`): stdio and in-memory
 * carry one client per connection; else (2026-07-28 or stateless 2025 HTTP with no key at all)
 * {@link ANONYMOUS_OWNER}. Another owner gets the answer of an unknown id.
 */
import { randomBytes } from 'node:crypto';
import type { RequestInfo, ServerHost } from '@mcp-tether/core';

/**
 * Who asks: a call context, or a non-call request (`tasks/get`: its `RequestInfo` plus the host).
 * Pass `era` where known: a 2026-07-28 request has no session or connection to bind to.
 */
export interface OwnerSource {
  readonly principal: string | undefined;
  /** Who the client is when the transport conveys it (`ctx.clientKey`: the principal, else e.g. `ip:<address>`). */
  readonly clientKey?: string | undefined;
  readonly sessionId: string | undefined;
  readonly host: ServerHost;
  readonly era?: 'legacy' | 'modern';
  /**
   * Whether server→client requests can reach the client (`ctx.channel`): `false` on a 2025-era
   * call marks stateless HTTP, where every request is served by a fresh server (no connection to bind to).
   */
  readonly channel?: boolean;
}

/** The {@link OwnerSource} of a non-call request (`tasks/*`, `resources/subscribe`): the fields the owner rule reads of a call. */
export function requestOwnerSource(info: RequestInfo, host: ServerHost): OwnerSource {
  return {
    principal: info.principal,
    clientKey: info.clientKey,
    sessionId: info.sessionId,
    host,
    era: info.era,
    ...(info.channel !== undefined ? { channel: info.channel } : {}),
  };
}

const hostIds = new WeakMap<ServerHost, string>();

/**
 * The owner of every requestor that cannot be identified (no principal on 2026-07-28 or on stateless
 * 2025 HTTP). All such clients share it, so the engine honours no idempotency key for it (a repeated
 * key would hand one client another's job) and `tasks/list` lists nothing for it (MCP: a server that
 * cannot identify requestors SHOULD NOT offer a list); only the unguessable id reaches such a job.
 */
export const ANONYMOUS_OWNER = 'anonymous';

/**
 * Whether an owner stands for one client, so that its jobs may be listed (`tasks/list`) and its
 * idempotency keys honoured: a principal, a session or a connection. Not {@link ANONYMOUS_OWNER},
 * and not a client key (`k:`): an address may be shared by many clients (a NAT, a proxy), each of
 * which reaches its own jobs by their unguessable id only.
 */
export function isListableOwner(owner: string): boolean {
  return owner !== ANONYMOUS_OWNER && !owner.startsWith('k:');
}

/** The default owner of a call's jobs (see {@link JobEngineOptions.owner}). */
export function defaultOwner(ctx: OwnerSource): string {
  if (ctx.principal !== undefined) return `p:${ctx.principal}`;
  // The transport knows the client (HTTP: its address by default): a new connection of the same client finds its jobs.
  if (ctx.clientKey !== undefined && ctx.clientKey !== '') return `k:${ctx.clientKey}`;
  if (ctx.sessionId !== undefined) return `s:${ctx.sessionId}`;
  // 2026-07-28 and stateless 2025 HTTP: a fresh server per request, no session or connection to bind to.
  if (ctx.era === 'modern' || ctx.channel === false) return ANONYMOUS_OWNER;
  let id = hostIds.get(ctx.host);
  if (id === undefined) {
    id = `c:${randomBytes(12).toString('base64url')}`;
    hostIds.set(ctx.host, id);
  }
  return id;
}
