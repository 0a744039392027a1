/**
 * Structural views of the SDK objects the front touches (SDK 1.x and 2.x share them), and the
 * conversions between tether's {@link Principal} and the SDK's `AuthInfo`. Nothing here imports
 * the SDK: the front loads the transport classes lazily, from whichever SDK line a server uses.
 */
import { anonymousAuthInfo, identityOf } from '@mcp-tether/core';
import type { Admitted } from './guard.js';
import type { Id } from './jsonrpc.js';
import type { FactoryInfo, Principal } from './options.js';

/** The SDK's `AuthInfo`. */
export interface AuthInfo {
  token: string;
  clientId: string;
  scopes: string[];
  expiresAt?: number;
  extra?: Record<string, unknown>;
}

/** Structural view of the SDKs' `WebStandardStreamableHTTPServerTransport` (1.x and 2.x share its internals). */
export interface WebTransport {
  sessionId?: string;
  onclose?: () => void;
  onerror?: (e: Error) => void;
  handleRequest(req: Request, options?: { parsedBody?: unknown; authInfo?: AuthInfo }): Promise<Response>;
  send(message: unknown, options?: unknown): Promise<void>;
  close(): Promise<void>;
  _requestToStreamMapping: Map<Id, string>;
  _streamMapping: Map<string, { cleanup(): void }>;
  _requestResponseMap: Map<Id, unknown>;
  /** SDK 1.x only. */
  _resumableStreams?: Set<string>;
}

export type TransportCtor = new (options: Record<string, unknown>) => WebTransport;

/** The SDK 2.x `createMcpHandler` result. */
export interface ModernHandler {
  fetch(request: Request, options?: { parsedBody?: unknown; authInfo?: AuthInfo }): Promise<Response>;
  close(): Promise<void>;
  /** SDK 2.x `ServerNotifier`: publishes onto the open `subscriptions/listen` streams. */
  notify?: Record<ModernNotice, (...args: string[]) => void>;
}

/** The `subscriptions/listen` notifications the front forwards (`McpHttp.notify`). */
export type ModernNotice = 'toolsChanged' | 'promptsChanged' | 'resourcesChanged' | 'resourceUpdated';

type Encoder = { encode(text: string): Uint8Array };

/** What the SDK transport writes into one stream: its controller, encoder, message and event id. */
export interface SourceEvent {
  controller: ReadableStreamDefaultController<Uint8Array>;
  encoder: Encoder;
  message: Record<string, unknown>;
  eventId: string | undefined;
}

/** The session transports' `writeSSEEvent` (SDK 1.x and 2.x). */
export type WriteSse = (
  controller: ReadableStreamDefaultController<Uint8Array>,
  encoder: Encoder,
  message: unknown,
  eventId?: string,
) => boolean;

/** Events one SDK stream may queue before the client has read them, past which shaping starts. */
export const MAX_QUEUED_EVENTS = 32;

/** tether's principal → the SDK's `AuthInfo`. */
export function authInfo(p: Principal): AuthInfo {
  const a: AuthInfo = { token: p.token ?? '', clientId: p.clientId, scopes: p.scopes ?? [] };
  if (p.expiresAt !== undefined) a.expiresAt = p.expiresAt;
  if (p.extra !== undefined) a.extra = p.extra;
  return a;
}

/**
 * What the SDK is told of the client: the principal's `AuthInfo`, else core's anonymous `AuthInfo`
 * carrying the client key (`ctx.clientKey`), else nothing.
 */
export function authInfoFor(who: Admitted): AuthInfo | undefined {
  if (who.principal) return authInfo(who.principal);
  return who.clientKey === undefined ? undefined : anonymousAuthInfo(who.clientKey);
}

/** The principal and client key of the SDK's `AuthInfo` (as {@link authInfoFor} wrote it), for a factory. */
export function factoryIdentity(a: AuthInfo | undefined): Pick<FactoryInfo, 'principal' | 'clientKey'> {
  const { principal, clientKey } = identityOf(a);
  return { principal: principal === undefined ? undefined : principalOf(a), clientKey };
}

/** The SDK's `AuthInfo` → tether's principal (undefined for none). */
function principalOf(a: AuthInfo | undefined): Principal | undefined {
  if (!a) return undefined;
  const p: Principal = { clientId: a.clientId, token: a.token, scopes: a.scopes };
  if (a.expiresAt !== undefined) p.expiresAt = a.expiresAt;
  if (a.extra !== undefined) p.extra = a.extra;
  return p;
}
