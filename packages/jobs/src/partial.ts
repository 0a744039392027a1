/**
 * Partial output as a resource (`job://{jobId}/partial`, read with `?offset=N`) that can be
 * subscribed to: `resources/subscribe` per 2025 session
 * (`notifications/resources/updated`), and 2026-07-28 `subscriptions/listen` streams through the
 * user's `notifyResourceUpdated`. Updates are driven by the store's signals (any replica) and
 * throttled (the last one is never lost).
 */
import {
  JsonRpcErrorCode,
  PARTIAL_META_KEY,
  ProtocolError,
  type CallContext,
  type JsonObject,
  type PartialMeta,
  type RequestInfo,
  type ServerHost,
} from '@mcp-tether/core';
import type { JobEngine } from './engine.js';
import { PARTIAL_ANY, parsePartialUri, partialUriOf } from './ids.js';
import { isTerminal } from './store.js';
import { requestOwnerSource } from './owner.js';

/** A resource template both SDK lines accept (they read `uriTemplate.match/toString/variableNames`, `listCallback`, `completeCallback`). */
export const partialTemplate = {
  uriTemplate: {
    variableNames: ['jobId'],
    match: (uri: string) => {
      const m = PARTIAL_ANY.exec(uri);
      return m === null ? null : { jobId: m[1]! };
    },
    toString: () => 'job://{jobId}/partial',
  },
  listCallback: undefined,
  completeCallback: () => undefined,
};

/**
 * `resources/read` of `job://{jobId}/partial[?offset=N]`: the chunks from `offset` on, and in
 * `_meta["io.github.mcp-tether/partial"]` the offset to read next, the job's status and `done`.
 * @throws ProtocolError `-32002` (2025) / `-32602` (2026) for an unknown, foreign or expired job;
 *   `-32602` for a malformed offset
 */
export async function readPartial(engine: JobEngine, uri: string, ctx: CallContext | undefined): Promise<JsonObject> {
  const parsed = parsePartialUri(uri);
  const notFoundError = () =>
    new ProtocolError(
      ctx?.era === 'modern' ? JsonRpcErrorCode.InvalidParams : -32002,
      `Resource not found: ${uri.slice(0, 200)}`,
      { uri: uri.slice(0, 200) },
    );
  if (ctx === undefined) throw notFoundError();
  if (parsed === undefined) {
    if (!PARTIAL_ANY.test(uri)) throw notFoundError();
    throw new ProtocolError(
      JsonRpcErrorCode.InvalidParams,
      `Invalid partial-output URI ${uri.slice(0, 200)}: the only query is ?offset=N, N a whole number ≥ 0 (the "next" of the last read)`,
      {
        uri: uri.slice(0, 200),
      },
    );
  }
  const owner = engine.ownerOf(ctx);
  const [part, job] = await Promise.all([
    engine.store.readPartial(parsed.jobId, owner, parsed.offset),
    engine.get(parsed.jobId, owner),
  ]);
  if (part === undefined || job === undefined) throw notFoundError();
  return {
    contents: [
      {
        uri,
        mimeType: 'text/plain',
        text: part.chunks.join(''),
        _meta: {
          [PARTIAL_META_KEY]: {
            offset: Math.min(parsed.offset, part.next),
            next: part.next,
            nextUri: `${partialUriOf(parsed.jobId)}?offset=${part.next}`,
            status: job.status,
            done: isTerminal(job.status),
          } satisfies PartialMeta,
        },
      },
    ],
  };
}

interface Sub {
  readonly uri: string;
  off: (() => void) | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  lastSent: number;
  closed: boolean;
}

/**
 * Throttled: at most one notice per interval; a change inside the interval is sent at its end.
 * `last` (the job ended): stop listening once the final notice went out.
 */
function throttled(
  sub: Sub,
  last: boolean,
  intervalMs: number,
  notify: () => Promise<void> | void,
  onError: (e: unknown) => void,
): void {
  if (sub.closed) return;
  if (last) {
    sub.off?.();
    sub.off = undefined;
  }
  if (sub.timer !== undefined) return;
  const wait = sub.lastSent + intervalMs - Date.now();
  const send = () => {
    sub.timer = undefined;
    if (sub.closed) return;
    sub.lastSent = Date.now();
    try {
      void Promise.resolve(notify()).catch(onError);
    } catch (err) {
      onError(err);
    }
  };
  if (wait <= 0) send();
  else {
    sub.timer = setTimeout(send, wait);
    sub.timer.unref?.();
  }
}

/**
 * 2026-07-28: partial-output changes of jobs started on modern requests, told through the user's
 * `notifyResourceUpdated` (e.g. `createMcpHandler`'s `handler.notify.resourceUpdated`), which
 * reaches the `subscriptions/listen` streams whose `resourceSubscriptions` name the URI.
 */
export class ModernUpdates {
  constructor(
    private readonly engine: JobEngine,
    private readonly intervalMs: number,
    private readonly notify: (uri: string) => void | Promise<void>,
  ) {}

  async follow(jobId: string, owner: string): Promise<void> {
    const sub: Sub = { uri: partialUriOf(jobId), off: undefined, timer: undefined, lastSent: 0, closed: false };
    const send = () => this.notify(sub.uri);
    sub.off = await this.engine.watch(jobId, owner, (s) => {
      if (s.type === 'partial') throttled(sub, false, this.intervalMs, send, this.engine.reportError);
      else if (s.type === 'update' && isTerminal(s.job.status))
        throttled(sub, true, this.intervalMs, send, this.engine.reportError);
    });
  }
}

/** `resources/subscribe` for partial-output resources, per session; updates driven by the store's signals. */
export class Subscriptions {
  private readonly byHost = new WeakMap<ServerHost, Map<string, Sub>>();

  constructor(
    private readonly engine: JobEngine,
    private readonly intervalMs: number,
  ) {}

  async subscribe(host: ServerHost, params: JsonObject, info: RequestInfo): Promise<JsonObject> {
    const uri = typeof params.uri === 'string' ? params.uri : undefined;
    if (uri === undefined)
      throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'resources/subscribe: uri must be a string');
    const parsed = parsePartialUri(uri);
    const notFound = () =>
      new ProtocolError(
        info.era === 'modern' ? JsonRpcErrorCode.InvalidParams : -32002,
        `Resource not found: ${uri.slice(0, 200)}`,
        { uri: uri.slice(0, 200) },
      );
    if (parsed === undefined) throw notFound();
    const canonical = partialUriOf(parsed.jobId);
    let subs = this.byHost.get(host);
    if (subs === undefined) {
      subs = new Map();
      this.byHost.set(host, subs);
    }
    if (subs.has(canonical)) return {};
    const owner = this.engine.ownerOf(requestOwnerSource(info, host));
    const sub: Sub = { uri: canonical, off: undefined, timer: undefined, lastSent: 0, closed: false };
    subs.set(canonical, sub);
    let off: (() => void) | undefined;
    try {
      off = await this.engine.watch(parsed.jobId, owner, (s) => {
        if (s.type === 'partial') this.schedule(host, sub, false);
        else if (s.type === 'update' && isTerminal(s.job.status)) this.schedule(host, sub, true);
      });
    } catch (err) {
      if (subs.get(canonical) === sub) subs.delete(canonical); // a retry subscribes anew
      throw err;
    }
    if (off === undefined) {
      subs.delete(canonical);
      throw notFound();
    }
    if (sub.closed) off();
    else sub.off = off;
    return {};
  }

  async unsubscribe(host: ServerHost, params: JsonObject, _info: RequestInfo): Promise<JsonObject> {
    const uri = typeof params.uri === 'string' ? params.uri : undefined;
    if (uri === undefined)
      throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'resources/unsubscribe: uri must be a string');
    const parsed = parsePartialUri(uri);
    const sub = parsed === undefined ? undefined : this.byHost.get(host)?.get(partialUriOf(parsed.jobId));
    if (sub !== undefined) this.drop(host, sub);
    return {};
  }

  closeHost(host: ServerHost): void {
    const subs = this.byHost.get(host);
    if (subs === undefined) return;
    for (const sub of [...subs.values()]) this.drop(host, sub);
  }

  private drop(host: ServerHost, sub: Sub): void {
    sub.closed = true;
    sub.off?.();
    sub.off = undefined;
    if (sub.timer !== undefined) clearTimeout(sub.timer);
    sub.timer = undefined;
    const subs = this.byHost.get(host);
    if (subs?.get(sub.uri) === sub) subs.delete(sub.uri);
  }

  private schedule(host: ServerHost, sub: Sub, last: boolean): void {
    throttled(
      sub,
      last,
      this.intervalMs,
      () => host.notify({ method: 'notifications/resources/updated', params: { uri: sub.uri } }),
      this.engine.reportError,
    );
  }
}
