/**
 * The guard: what a request must pass before the front does anything for it — its `Host` and
 * `Origin` (DNS-rebinding protection) and `authenticate`.
 */
import { errorResponse } from './jsonrpc.js';
import type { McpHttpOptions, Principal, Resolved } from './options.js';

export class Guard {
  constructor(
    private readonly options: McpHttpOptions,
    private readonly opts: Resolved,
  ) {}

  /** 403 for a Host or Origin that is not allowed (DNS rebinding), else undefined. */
  checkHostAndOrigin(headers: Headers, urlHost?: string): Response | undefined {
    const hosts = this.opts.allowedHosts;
    if (hosts !== '*') {
      // A Fetch API Request carries no Host header: its URL's host is what the client asked for.
      const host = headers.get('host') ?? urlHost ?? null;
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
    if (!p || typeof p.clientId !== 'string') {
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
