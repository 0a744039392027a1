/**
 * `RedisEventStore`: the SDK's Streamable HTTP `EventStore` (SDK 1.x
 * `@modelcontextprotocol/sdk/server/streamableHttp.js` and 2.x `@modelcontextprotocol/server`, the
 * same interface) on Redis streams, so that a client's `Last-Event-ID` resumes on any replica.
 *
 * One Redis stream per SSE stream (`<prefix>events:{<scope>}:<streamId>`), trimmed to
 * `maxEventsPerStream` and expiring `ttlMs` after its last event. Each scope is also bounded in
 * bytes (`maxBytesPerScope`): a byte counter (`<prefix>events:{<scope>}#bytes`) and the scope's
 * events in order (`<prefix>events:{<scope>}#order`, a list), both expiring with the scope's last
 * event; one Lua script adds an event and deletes the scope's oldest until it fits. An event id is
 * `<base64url(streamId)>.<redis stream entry id>`: any replica reads the SSE stream back from it
 * without a lookup table.
 */
import { SESSION_EVENT_BYTES } from '@mcp-tether/core';
import type { Redis } from 'ioredis';
import { connect, type Connections, type RedisConnectionOptions, withScripts } from './connection.js';

/** A JSON-RPC message as the SDK stores it (the SDKs' `JSONRPCMessage`). */
export type StoredMessage = { jsonrpc: '2.0' } & Record<string, unknown>;

/** Options of {@link RedisEventStore}. */
export interface RedisEventStoreOptions extends RedisConnectionOptions {
  /**
   * Events kept per SSE stream; the oldest are trimmed (approximately: Redis trims whole nodes).
   * Default 5 000.
   */
  maxEventsPerStream?: number;
  /**
   * Bytes (UTF-8 JSON of the messages) kept per scope (e.g. per session), all its SSE streams
   * together; the scope's oldest events are deleted first, and a replay from a deleted event id
   * rejects like one trimmed by `maxEventsPerStream`. An event larger than the bound is sent live
   * but not kept, and deletes the scope's older events. Default `SESSION_EVENT_BYTES` of
   * `@mcp-tether/core` (1 MiB), the bound of `@mcp-tether/http`'s in-memory store.
   */
  maxBytesPerScope?: number;
  /** An SSE stream's events expire this long after its last event, in ms. Default 3 600 000 (1 hour). */
  ttlMs?: number;
  /**
   * Told when Redis could not store an event. The message still goes out live; it is only not
   * resumable (a replay after it fails, and the client starts over). Default: `console.warn`.
   */
  onError?: (error: unknown) => void;
}

/** The SDK's `EventStore` shape (identical on SDK 1.x and 2.x). */
export interface SdkEventStore {
  storeEvent(streamId: string, message: StoredMessage): Promise<string>;
  getStreamIdForEventId?(eventId: string): Promise<string | undefined>;
  replayEventsAfter(
    lastEventId: string,
    handlers: { send: (eventId: string, message: StoredMessage) => Promise<void> },
  ): Promise<string>;
}

const PAGE = 500;
const ENTRY_ID = /^\d+-\d+$/;

/**
 * KEYS: stream, scope byte counter, scope order list. ARGV: maxlen, ttl ms, json, bytes, max bytes.
 * Adds the event, then deletes the scope's oldest events until the scope holds at most max bytes.
 * The older events' stream keys are not in KEYS, but share the scope's hash tag (same slot).
 * An event already trimmed by MAXLEN or expired still counts until its turn (XDEL is a no-op):
 * the count errs on the safe side.
 */
const STORE = `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'm', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('RPUSH', KEYS[3], ARGV[4] .. ' ' .. id .. ' ' .. KEYS[1])
local total = redis.call('INCRBY', KEYS[2], ARGV[4])
local max = tonumber(ARGV[5])
while total > max do
  local e = redis.call('LPOP', KEYS[3])
  if not e then
    redis.call('SET', KEYS[2], 0)
    break
  end
  local n, eid, key = string.match(e, '^(%d+) (%S+) (.*)$')
  redis.call('XDEL', key, eid)
  total = redis.call('DECRBY', KEYS[2], n)
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return id
`;

type EventCommands = {
  tetherEventStore(
    stream: string,
    bytesKey: string,
    orderKey: string,
    maxlen: number,
    ttlMs: number,
    json: string,
    bytes: number,
    maxBytes: number,
  ): Promise<string>;
};

/**
 * The SDK's `EventStore` on Redis. Give one to each Streamable HTTP transport
 * (`new StreamableHTTPServerTransport({ eventStore, ... })`, or the `eventStore` option of
 * `@mcp-tether/http`). Events live under a scope: use {@link RedisEventStore.scoped} with the
 * session id (or the principal) so that one session's event ids replay nothing in another; all
 * scopes share the store's connection.
 *
 * - `storeEvent`: one Lua script: `XADD` (with approximate trimming), `PEXPIRE`, and the scope's
 *   oldest events deleted past `maxBytesPerScope`. When Redis is
 *   unreachable it still returns an id (the message goes out live) and reports to `onError`; that
 *   id, and only it, cannot be resumed from.
 * - `replayEventsAfter`: the events after `lastEventId` of the same SSE stream, in order, skipping
 *   the SDK's empty priming events; an unknown or expired id rejects (the SDK answers the GET with
 *   an error and the client starts over).
 */
export class RedisEventStore implements SdkEventStore {
  readonly maxEventsPerStream: number;
  readonly maxBytesPerScope: number;
  readonly ttlMs: number;
  readonly scope: string;
  readonly #conn: Connections;
  readonly #owner: boolean;
  readonly #onError: (error: unknown) => void;

  constructor(
    options: RedisEventStoreOptions = {},
    shared?: { conn: Connections; scope: string; parent: RedisEventStore },
  ) {
    const who = '@mcp-tether/redis: RedisEventStore';
    const max = options.maxEventsPerStream ?? shared?.parent.maxEventsPerStream ?? 5_000;
    const ttl = options.ttlMs ?? shared?.parent.ttlMs ?? 3_600_000;
    if (!Number.isInteger(max) || max < 1) throw new TypeError(`${who}: maxEventsPerStream must be a positive integer`);
    const bytes = options.maxBytesPerScope ?? shared?.parent.maxBytesPerScope ?? SESSION_EVENT_BYTES;
    if (!Number.isFinite(ttl) || ttl < 1) throw new TypeError(`${who}: ttlMs must be a positive number of ms`);
    if (!Number.isSafeInteger(bytes) || bytes < 1)
      throw new TypeError(`${who}: maxBytesPerScope must be a positive integer (bytes)`);
    this.maxEventsPerStream = max;
    this.maxBytesPerScope = bytes;
    this.ttlMs = Math.ceil(ttl);
    this.#conn = shared?.conn ?? connect(options, who);
    withScripts(this.#conn.redis, { tetherEventStore: { numberOfKeys: 3, lua: STORE } });
    this.#owner = shared === undefined;
    this.scope = shared?.scope ?? '';
    this.#onError =
      options.onError ??
      ((err) =>
        console.warn(
          '[@mcp-tether/redis] RedisEventStore: an event could not be stored (not resumable):',
          err instanceof Error ? err.message : err,
        ));
  }

  /**
   * The same store under another scope (e.g. a session id): events stored through one scope are
   * unknown to every other. Shares this store's connection; closing a scoped store does nothing.
   */
  scoped(scope: string): RedisEventStore {
    if (typeof scope !== 'string')
      throw new TypeError('@mcp-tether/redis: RedisEventStore.scoped: scope must be a string');
    return new RedisEventStore({ onError: this.#onError }, { conn: this.#conn, scope, parent: this });
  }

  async storeEvent(streamId: string, message: StoredMessage): Promise<string> {
    const key = this.#key(streamId);
    const scope = this.#scopeKey();
    try {
      const json = JSON.stringify(message) ?? 'null';
      const entry = await (this.#conn.redis as Redis & EventCommands).tetherEventStore(
        key,
        `${scope}#bytes`,
        `${scope}#order`,
        this.maxEventsPerStream,
        this.ttlMs,
        json,
        Buffer.byteLength(json),
        this.maxBytesPerScope,
      );
      return `${encode(streamId)}.${entry}`;
    } catch (err) {
      this.#onError(err);
      return `${encode(streamId)}.lost-${Date.now()}`;
    }
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const parsed = parse(eventId);
    if (!parsed) return undefined;
    const found = await this.#conn.redis.xrange(this.#key(parsed.streamId), parsed.entry, parsed.entry, 'COUNT', 1);
    return found.length > 0 ? parsed.streamId : undefined;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: StoredMessage) => Promise<void> },
  ): Promise<string> {
    const parsed = parse(lastEventId);
    if (!parsed) throw new Error(`unknown event id ${JSON.stringify(lastEventId.slice(0, 100))}`);
    const key = this.#key(parsed.streamId);
    const redis = this.#conn.redis;
    if ((await redis.xrange(key, parsed.entry, parsed.entry, 'COUNT', 1)).length === 0) {
      throw new Error(`unknown or expired event id ${JSON.stringify(lastEventId.slice(0, 100))}`);
    }
    const prefix = `${encode(parsed.streamId)}.`;
    for (let from = parsed.entry; ; ) {
      const page = await redis.xrange(key, `(${from}`, '+', 'COUNT', PAGE);
      for (const [entry, fields] of page) {
        from = entry;
        const text = fields[1];
        if (text === undefined) continue;
        const message = JSON.parse(text) as StoredMessage;
        if (Object.keys(message).length === 0) continue; // the SDK's priming event
        await send(prefix + entry, message);
      }
      if (page.length < PAGE) break;
    }
    return parsed.streamId;
  }

  /** Close the connections the store opened (a scoped store: nothing). */
  async close(): Promise<void> {
    if (this.#owner) await this.#conn.close();
  }

  #scopeKey(): string {
    return `${this.#conn.prefix}events:{${encode(this.scope)}}`;
  }

  #key(streamId: string): string {
    return `${this.#scopeKey()}:${streamId}`;
  }
}

function encode(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

function parse(eventId: string): { streamId: string; entry: string } | undefined {
  if (typeof eventId !== 'string' || eventId.length > 1_000) return undefined;
  const dot = eventId.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const entry = eventId.slice(dot + 1);
  if (!ENTRY_ID.test(entry)) return undefined;
  const streamId = Buffer.from(eventId.slice(0, dot), 'base64url').toString('utf8');
  return { streamId, entry };
}
