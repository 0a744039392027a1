/**
 * The guard: what a request must pass before the front reads its body or does anything for it —
 * its `Host` and `Origin` (DNS-rebinding protection) and `authenticate` — and who the client is
 * (its client key, for the per-client bounds and `ctx.clientKey`).
 */
import { errorResponse } from './jsonrpc.js';
import type { McpHttpOptions, Principal, Resolved } from './options.js';

/** What the adapter knows of a request's connection. */
export interface Remote {
  /** The peer's IP address (the socket's; the Fetch handler's `remoteAddress` argument). */
  readonly address: string | undefined;
  /** The connection (a Node socket), as an identity for `clientKey: 'connection'`. */
  readonly connection: object | undefined;
}

/** A request that passed the guard. */
export interface Admitted {
  readonly principal: Principal | undefined;
  /** The principal's id, else the key the `clientKey` option chose, else undefined. */
  readonly clientKey: string | undefined;
}

/** `host` / `host:port` as RFC 9110 §7.2 allows it (reg-name, IPv4, or a bracketed IPv6 literal; a numeric port ≤ 65535). */
const HOST = /^(?:\[[0-9a-f:.]+\]|[a-z0-9\-._~!$&'()*+,;=%]+)(?::(\d{0,5}))?$/i;

/** True when `host` is a syntactically valid `Host` header value. */
export function validHost(host: string): boolean {
  const m = HOST.exec(host);
  return m !== null && (m[1] === undefined || m[1] === '' || Number(m[1]) <= 65_535);
}

export class Guard {
  private connections = new WeakMap<object, number>();
  private nextConnection = 0;

  constructor(
    private readonly options: McpHttpOptions,
    private readonly opts: Resolved,
  ) {}

  /** 400 for a malformed Host, 403 for a Host or Origin that is not allowed (DNS rebinding), else undefined. */
  checkHostAndOrigin(headers: Headers, urlHost?: string): Response | undefined {
    const header = headers.get('host');
    if (header !== null && !validHost(header))
      return errorResponse(
        400,
        null,
        -32000,
        `Bad Request: malformed Host header ${JSON.stringify(header.slice(0, 300))}`,
      );
    const hosts = this.opts.allowedHosts;
    if (hosts !== '*') {
      // A Fetch API Request carries no Host header: its URL's host is what the client asked for.
      const host = header ?? urlHost ?? null;
      if (host === null || !hosts.has(hostnameOf(host)))
        return errorResponse(403, null, -32000, `Forbidden: Host ${JSON.stringify(host ?? '')} is not allowed`);
    }
    const origin = headers.get('origin');
    const origins = this.opts.allowedOrigins;
    if (origin !== null && origins !== '*') {
      let url: URL | undefined;
      try {
        url = new URL(origin);
      } catch {
        url = undefined;
      }
      const ok =
        url !== undefined &&
        url.origin !== 'null' &&
        (origins.origins.has(url.origin.toLowerCase()) || origins.hosts.has(hostnameOf(url.host)));
      if (!ok) return errorResponse(403, null, -32000, `Forbidden: Origin ${JSON.stringify(origin)} is not allowed`);
    }
    return undefined;
  }

  /** Host/Origin checks, then `authenticate`, then the client key: what may go on, or the answer. */
  async admit(request: Request, remote: Remote, urlHost?: string): Promise<Admitted | Response> {
    const refused = this.checkHostAndOrigin(request.headers, urlHost);
    if (refused) return refused;
    const principal = await this.authenticate(request);
    if (principal instanceof Response) return principal;
    return { principal, clientKey: principal ? principal.clientId : this.clientKey(request, remote) };
  }

  /** The client key of a request nobody authenticated (see `McpHttpOptions.clientKey`). */
  private clientKey(request: Request, remote: Remote): string | undefined {
    const mode = this.options.clientKey ?? 'address';
    if (typeof mode === 'function') {
      const key = mode(request, { address: this.address(request, remote) });
      return typeof key === 'string' && key !== '' ? key : undefined;
    }
    if (mode === 'address') {
      const address = this.address(request, remote);
      return address === undefined ? undefined : `ip:${address}`;
    }
    if (mode === 'session') {
      const sid = request.headers.get('mcp-session-id');
      if (sid !== null && sid !== '') return `session:${sid}`;
    }
    const c = remote.connection;
    if (c === undefined) return undefined;
    let n = this.connections.get(c);
    if (n === undefined) {
      n = ++this.nextConnection;
      this.connections.set(c, n);
    }
    return `conn:${n}`;
  }

  /** The client's address: the peer's, or with `trustProxy` hops, the `X-Forwarded-For` entry that far from the right. */
  private address(request: Request, remote: Remote): string | undefined {
    const hops = this.opts.trustProxy;
    let address = remote.address;
    if (hops > 0) {
      const chain = (request.headers.get('x-forwarded-for') ?? '')
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== '');
      if (address !== undefined) chain.push(address);
      address = chain[Math.max(0, chain.length - 1 - hops)];
    }
    return address === undefined ? undefined : normalizeAddress(address);
  }

  /** The principal `authenticate` names, undefined without the hook, or the 401 to answer. */
  async authenticate(request: Request): Promise<Principal | undefined | Response> {
    const auth = this.options.authenticate;
    if (!auth) return undefined;
    let p: Principal | string | undefined | null;
    try {
      p = await auth(request);
    } catch {
      p = undefined;
    }
    if (typeof p === 'string') p = { clientId: p };
    // An empty id names nobody (core reads `clientId: ''` as "no principal").
    if (!p || typeof p.clientId !== 'string' || p.clientId === '') {
      return errorResponse(401, null, -32000, 'Unauthorized', undefined, { 'www-authenticate': 'Bearer' });
    }
    return p;
  }
}

/** `host[:port]` → lower-case hostname (IPv6 kept in brackets). */
export function hostnameOf(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

/** `::ffff:192.0.2.1` → `192.0.2.1`; IPv6 lower-cased. */
function normalizeAddress(address: string): string {
  const a = address.toLowerCase();
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}
