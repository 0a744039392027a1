import { createHash } from 'node:crypto';
import {
  type CallContext,
  type CallMethod,
  type CallResult,
  diagnostics,
  ErrorCode,
  JsonRpcErrorCode,
  type Middleware,
  type Next,
  ProtocolError,
} from '@mcp-tether/core';
import { type BucketCheck, MemoryRateLimitStore, type Rate, type RateLimitStore, type TakeResult } from './store.js';

/** Which bucket refused a call: every call of the client, its calls of one method, or of one tool. */
export type RateLimitScope = 'client' | 'method' | 'tool';

/** Options of {@link rateLimit}. At least one of `perClient`, `perMethod`, `perTool` is required. */
export interface RateLimitOptions {
  /** One bucket per client key for all its calls (tools, prompts, resources). */
  perClient?: Rate;
  /**
   * One bucket per client key and method: one {@link Rate} for every method, or one per method
   * (`{ 'tools/call': ..., 'resources/read': ... }`; methods not named are not limited by this scope).
   */
  perMethod?: Rate | Partial<Record<CallMethod, Rate>>;
  /**
   * One bucket per client key and name (tool name, prompt name, resource URI): one {@link Rate} for
   * every name, or one per name (`{ search: ..., '*': ... }`: `'*'` serves the names not listed; without
   * it they are not limited by this scope).
   */
  perTool?: Rate | Record<string, Rate>;
  /**
   * The client key of a call. Default: `ctx.clientKey` (the principal when authenticated, else what
   * the transport front says identifies the client, e.g. the remote address), else the session id,
   * else `'anonymous'` (stdio: one client).
   */
  clientKey?: (ctx: CallContext) => string;
  /** Which calls count. Default: every call. */
  select?: (ctx: CallContext) => boolean;
  /** Where buckets live. Default: a new {@link MemoryRateLimitStore} (one process). Pass `RedisRateLimitStore` to share across replicas. */
  store?: RateLimitStore;
  /**
   * When the store fails (Redis unreachable): `'refuse'` (default) answers the call with the store's
   * error (`-32603`, `data.code: 'STORE_UNAVAILABLE'` for the Redis store); `'allow'` lets the call
   * through unlimited (and reports the error to `onError`).
   */
  onStoreError?: 'refuse' | 'allow';
  /** Receives store errors (both modes). Default: nothing for `'refuse'` (the caller gets the error), `console.error` for `'allow'`. */
  onError?: (error: unknown, ctx: CallContext) => void;
}

/** Counts since creation, in this process. */
export interface RateLimitStats {
  /** Calls checked and let through. */
  allowed: number;
  /** Calls refused with `RATE_LIMITED`, per scope that refused them. */
  refused: Record<RateLimitScope, number>;
  /** Checks the store failed. */
  storeErrors: number;
}

/** The rate-limit middleware: a {@link Middleware} with counts. */
export interface RateLimitMiddleware extends Middleware {
  readonly name: 'ratelimit';
  handle(ctx: CallContext, next: Next): Promise<CallResult>;
  stats(): RateLimitStats;
}

/** The `data` of a `RATE_LIMITED` JSON-RPC error. */
export interface RateLimitedData {
  code: 'RATE_LIMITED';
  /** Which bucket refused. */
  scope: RateLimitScope;
  /** The method or name the bucket counts (absent for `client`). */
  subject?: string;
  /** Wait at least this long before calling again, in ms. */
  retryAfterMs: number;
  /** The same wait in whole seconds, rounded up (toolhive's field). */
  retryAfterSeconds: number;
  /** The bucket's rate. */
  burst: number;
  perSecond: number;
}

/**
 * The error a refused call gets: JSON-RPC `-32029` ({@link JsonRpcErrorCode.RateLimited}) with
 * {@link RateLimitedData}. Also thrown for `tools/call`: the client (not the model) should wait.
 */
export class RateLimitedError extends ProtocolError {
  declare readonly data: RateLimitedData;
  constructor(data: RateLimitedData) {
    const what = data.scope === 'client' ? 'this client' : `${data.scope} ${JSON.stringify(data.subject)}`;
    super(
      JsonRpcErrorCode.RateLimited,
      `Rate limit exceeded for ${what} (${data.burst} at once, ${data.perSecond}/s): retry after ${data.retryAfterSeconds} s`,
      data,
    );
    this.name = 'RateLimitedError';
  }
}

const who = '@mcp-tether/ratelimit: rateLimit()';

function checkRate(where: string, rate: unknown): Rate {
  const r = rate as Rate;
  if (typeof rate !== 'object' || rate === null) throw new TypeError(`${who}: ${where} must be { burst, perSecond }`);
  if (!Number.isInteger(r.burst) || r.burst < 1)
    throw new TypeError(`${who}: ${where}.burst must be a positive integer, got ${String(r.burst)}`);
  if (typeof r.perSecond !== 'number' || !Number.isFinite(r.perSecond) || r.perSecond <= 0)
    throw new TypeError(`${who}: ${where}.perSecond must be a positive finite number, got ${String(r.perSecond)}`);
  return { burst: r.burst, perSecond: r.perSecond };
}

const isRate = (v: unknown): boolean =>
  typeof v === 'object' && v !== null && typeof (v as { burst?: unknown }).burst === 'number';

/** A rate for every key, or a lookup per key (`'*'` as the fallback when `wildcard`). */
function ratesOf(
  where: string,
  value: Rate | Record<string, Rate> | undefined,
  wildcard: boolean,
): ((k: string) => Rate | undefined) | undefined {
  if (value === undefined) return undefined;
  if (isRate(value)) {
    const rate = checkRate(where, value);
    return () => rate;
  }
  if (typeof value !== 'object' || value === null)
    throw new TypeError(`${who}: ${where} must be a rate or a map of rates`);
  const map = new Map<string, Rate>();
  for (const [k, v] of Object.entries(value)) map.set(k, checkRate(`${where}[${JSON.stringify(k)}]`, v));
  const fallback = wildcard ? map.get('*') : undefined;
  return (k) => map.get(k) ?? fallback;
}

/** A key part safe in a store key: short names as they are (braces escaped), long ones hashed. */
function part(s: string): string {
  if (s.length > 200) return `#${createHash('sha256').update(s).digest('base64url')}`;
  return s.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);
}

/**
 * The default client key (see {@link RateLimitOptions.clientKey}): `ctx.clientKey` (the principal,
 * else what the transport front conveyed, e.g. `ip:<address>`), else `session:<id>`, else `'anonymous'`.
 */
export function defaultClientKey(ctx: CallContext): string {
  return ctx.clientKey ?? (ctx.sessionId !== undefined ? `session:${ctx.sessionId}` : 'anonymous');
}

/**
 * Token-bucket rate limits per client key: for all its calls (`perClient`), per method
 * (`perMethod`), per tool, prompt or resource (`perTool`). A call takes one token from each bucket
 * that applies, all or nothing, in one store operation (one Redis round trip with the Redis store);
 * when one is empty the call is refused at once, before any inner middleware or the handler runs,
 * with a {@link RateLimitedError}: JSON-RPC `-32029`, `data: { code: 'RATE_LIMITED', scope,
 * subject, retryAfterMs, retryAfterSeconds, burst, perSecond }`.
 *
 * Put it early in the chain (after `cancel()`), and give every server (session) the same instance:
 * `tether(server, [cancel(), limiter, ...])`.
 *
 * @throws TypeError on invalid options
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${who}: options are required`);
  const perClient = options.perClient === undefined ? undefined : checkRate('perClient', options.perClient);
  const perMethod = ratesOf('perMethod', options.perMethod as Rate | Record<string, Rate> | undefined, false);
  const perTool = ratesOf('perTool', options.perTool, true);
  if (!perClient && !perMethod && !perTool) throw new TypeError(`${who}: give perClient, perMethod or perTool`);
  const { clientKey = defaultClientKey, select, onError } = options;
  if (typeof clientKey !== 'function') throw new TypeError(`${who}: clientKey must be a function`);
  if (select !== undefined && typeof select !== 'function') throw new TypeError(`${who}: select must be a function`);
  const onStoreError = options.onStoreError ?? 'refuse';
  if (onStoreError !== 'refuse' && onStoreError !== 'allow')
    throw new TypeError(`${who}: onStoreError must be 'refuse' or 'allow'`);
  const store = options.store ?? new MemoryRateLimitStore();
  if (typeof store !== 'object' || store === null || typeof store.take !== 'function')
    throw new TypeError(`${who}: store must implement RateLimitStore (a take(checks) method)`);

  const stats: RateLimitStats = { allowed: 0, refused: { client: 0, method: 0, tool: 0 }, storeErrors: 0 };
  const report = (error: unknown, ctx: CallContext) => {
    try {
      if (onError) onError(error, ctx);
      else if (onStoreError === 'allow')
        console.error('[@mcp-tether/ratelimit] the store failed; the call was let through:', error);
    } catch {
      // a failing reporter must not take the call down
    }
  };

  /** The buckets of a call and what each counts. */
  const checksOf = (
    ctx: CallContext,
    client: string,
  ): { checks: BucketCheck[]; scopes: Array<[RateLimitScope, string?]> } => {
    // One hash tag per client: every bucket of a check lives in one Redis Cluster slot.
    const base = `{${part(client)}}:`;
    const checks: BucketCheck[] = [];
    const scopes: Array<[RateLimitScope, string?]> = [];
    if (perClient) {
      checks.push({ key: `${base}c`, ...perClient });
      scopes.push(['client']);
    }
    const m = perMethod?.(ctx.method);
    if (m) {
      checks.push({ key: `${base}m:${ctx.method}`, ...m });
      scopes.push(['method', ctx.method]);
    }
    const t = perTool?.(ctx.name);
    if (t) {
      checks.push({ key: `${base}t:${ctx.method}:${part(ctx.name)}`, ...t });
      scopes.push(['tool', ctx.name]);
    }
    return { checks, scopes };
  };

  return {
    name: 'ratelimit',
    async handle(ctx, next) {
      if (select && !select(ctx)) return next();
      const client = clientKey(ctx);
      if (typeof client !== 'string' || client === '')
        throw new TypeError(`${who}: clientKey must return a non-empty string, got ${String(client)}`);
      const { checks, scopes } = checksOf(ctx, client);
      if (checks.length === 0) return next();
      let result: TakeResult;
      try {
        result = await store.take(checks);
      } catch (err) {
        stats.storeErrors++;
        if (diagnostics.rateLimit.hasSubscribers)
          diagnostics.rateLimit.publish({ ctx, outcome: 'store-error', clientKey: client });
        report(err, ctx);
        if (onStoreError === 'allow') return next();
        throw err;
      }
      if (result.allowed) {
        stats.allowed++;
        return next();
      }
      const i = result.refusedBy >= 0 && result.refusedBy < checks.length ? result.refusedBy : 0;
      const [scope, subject] = scopes[i]!;
      stats.refused[scope]++;
      const retryAfterMs = Math.max(1, Math.ceil(result.retryAfterMs));
      if (diagnostics.rateLimit.hasSubscribers)
        diagnostics.rateLimit.publish({ ctx, outcome: 'refused', clientKey: client, scope, retryAfterMs });
      throw new RateLimitedError({
        code: ErrorCode.RATE_LIMITED,
        scope,
        ...(subject !== undefined ? { subject } : {}),
        retryAfterMs,
        retryAfterSeconds: Math.ceil(retryAfterMs / 1000),
        burst: checks[i]!.burst,
        perSecond: checks[i]!.perSecond,
      });
    },
    stats: () => ({ ...stats, refused: { ...stats.refused } }),
  };
}
