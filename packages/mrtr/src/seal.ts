/**
 * Sealing of `requestState` (MCP 2026-07-28 `basic/patterns/mrtr#requeststate-security`): the
 * state crosses the client, so it is treated as attacker-controlled. It is signed (HMAC-SHA256,
 * not encrypted: the client can read it), carries an expiry, and is bound to the request it was
 * issued for. Wire form, like the TypeScript SDK v2's `createRequestStateCodec`:
 *
 *     "v1." + b64url(JSON { p: payload, exp: ms-since-epoch, b: binding-tag }) + "." + b64url(HMAC)
 *
 * The MAC covers the text `v1.<payload segment>`.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { JsonRpcErrorCode, ProtocolError } from '@mcp-tether/core';

/** A sealing key: at least 32 bytes (a string counts its UTF-8 bytes). */
export type SealKey = string | Uint8Array;

/** Options of {@link createStateSealer}. */
export interface StateSealerOptions {
  /**
   * The key ring: the first key seals, every key opens (rotation: put the new key first and keep
   * the old one until states sealed with it have expired). Each key must be at least 32 bytes.
   * Default: the keys of the `MRTR_KEYS` environment variable (comma-separated, current first),
   * else one random key per process. Several server processes (replicas behind a load balancer)
   * must share keys: a retry sealed by one is opened by another.
   */
  keys?: readonly SealKey[];
  /** Lifetime of a sealed state, in ms. Default 600 000 (10 minutes). */
  ttlMs?: number;
  /** Largest sealed state accepted or produced, in bytes. Default 65 536 (64 KiB). */
  maxBytes?: number;
  /** Clock, in ms since the epoch. Default `Date.now` (so fake timers apply). */
  now?: () => number;
}

/** Why a state was rejected. */
export type StateRejection = 'malformed' | 'signature' | 'expired' | 'binding' | 'size' | 'replayed';

/**
 * A rejected `requestState`. It is a {@link ProtocolError} with the spec's invalid-params code
 * (`-32602`) and `data: { reason }`, so thrown from a middleware it becomes that JSON-RPC error.
 */
export class StateRejectedError extends ProtocolError {
  constructor(
    readonly reason: StateRejection,
    detail: string,
  ) {
    super(JsonRpcErrorCode.InvalidParams, `Invalid requestState: ${detail}`, { reason });
    this.name = 'StateRejectedError';
  }
}

/** Seals and opens continuation state. */
export interface StateSealer {
  /**
   * Seal `payload` (any JSON value) bound to `binding` (e.g. from {@link requestBinding}).
   * @returns the `v1.<payload>.<mac>` string
   * @throws RangeError when the sealed string would exceed `maxBytes`
   * @throws TypeError when `payload` is not JSON-serializable
   */
  seal(payload: unknown, binding?: string): string;
  /**
   * Verify and open a sealed string. Checks, in order: size, shape, MAC (against every key in the
   * ring, timing-safe), expiry, binding.
   * @throws StateRejectedError (`-32602`) for anything that fails
   */
  open(token: unknown, binding?: string): unknown;
  /** Lifetime of sealed states, in ms. */
  readonly ttlMs: number;
  /** Size cap, in bytes. */
  readonly maxBytes: number;
}

const PROCESS_KEY = Symbol.for('mcp-tether.mrtr.process-key');
/** One random key per process, shared by every sealer without configured keys (and by duplicate copies of this package). */
function processKey(): Buffer {
  const g = globalThis as unknown as Record<symbol, Buffer | undefined>;
  let key = g[PROCESS_KEY];
  if (key === undefined) {
    key = randomBytes(32);
    g[PROCESS_KEY] = key;
  }
  return key;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

/** Name of the environment variable read when no `keys` are given: comma-separated keys, current first. */
export const KEYS_ENV = 'MRTR_KEYS';

/** The key ring of `MRTR_KEYS`, or undefined when it is unset or empty. */
function keysFromEnv(): string[] | undefined {
  const text = typeof process === 'undefined' ? undefined : process.env[KEYS_ENV];
  if (text === undefined || text.trim() === '') return undefined;
  const keys = text
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  keys.forEach((k, i) => {
    if (Buffer.byteLength(k, 'utf8') < 32)
      throw new TypeError(
        `mrtr: ${KEYS_ENV} key #${i} has ${Buffer.byteLength(k, 'utf8')} bytes; sealing keys need at least 32`,
      );
  });
  return keys;
}

/**
 * Make a sealer.
 * @throws TypeError for a key shorter than 32 bytes, an empty key ring, or bad numbers
 */
export function createStateSealer(options: StateSealerOptions = {}): StateSealer {
  const ttlMs = options.ttlMs ?? 600_000;
  const maxBytes = options.maxBytes ?? 65_536;
  const now = options.now ?? Date.now;
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new TypeError('mrtr: ttlMs must be a positive number of ms');
  if (!Number.isInteger(maxBytes) || maxBytes < 64)
    throw new TypeError('mrtr: maxBytes must be an integer of at least 64');
  let keys: Buffer[];
  const configured = options.keys ?? keysFromEnv();
  if (configured === undefined) keys = [processKey()];
  else {
    if (!Array.isArray(configured) || configured.length === 0)
      throw new TypeError('mrtr: keys must be a non-empty list (current key first)');
    keys = configured.map((k, i) => {
      const b = typeof k === 'string' ? Buffer.from(k, 'utf8') : k instanceof Uint8Array ? Buffer.from(k) : undefined;
      if (!b) throw new TypeError(`mrtr: key #${i} must be a string or Uint8Array`);
      if (b.length < 32) throw new TypeError(`mrtr: key #${i} has ${b.length} bytes; sealing keys need at least 32`);
      return b;
    });
  }
  const mac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest('base64url');
  const tag = (binding: string | undefined) =>
    createHash('sha256')
      .update(binding ?? '')
      .digest('base64url');

  return {
    ttlMs,
    maxBytes,
    seal(payload, binding) {
      let json: string | undefined;
      try {
        json = JSON.stringify({ p: payload, exp: now() + ttlMs, b: tag(binding) });
      } catch (err) {
        throw new TypeError(`mrtr: requestState is not JSON-serializable (${(err as Error).message})`);
      }
      const head = `v1.${Buffer.from(json, 'utf8').toString('base64url')}`;
      const token = `${head}.${mac(keys[0]!, head)}`;
      if (token.length > maxBytes) {
        throw new RangeError(
          `mrtr: sealed requestState is ${token.length} bytes, over the ${maxBytes}-byte cap (keep state small: ids, not documents)`,
        );
      }
      return token;
    },
    open(token, binding) {
      if (typeof token !== 'string') throw new StateRejectedError('malformed', 'not a string');
      // Size first: the token is ASCII when well-formed, so its length is its size; anything
      // longer is refused before any decoding or hashing.
      if (token.length > maxBytes) throw new StateRejectedError('size', `over the ${maxBytes}-byte cap`);
      const parts = token.split('.');
      if (parts.length !== 3 || parts[0] !== 'v1' || !B64URL.test(parts[1]!) || !B64URL.test(parts[2]!)) {
        throw new StateRejectedError('malformed', 'not a sealed state');
      }
      const head = `${parts[0]}.${parts[1]}`;
      const given = Buffer.from(parts[2]!, 'utf8');
      let valid = false;
      for (const key of keys) {
        const expected = Buffer.from(mac(key, head), 'utf8');
        // Compare the encoded MACs, so that two spellings of the same bytes cannot both pass.
        if (expected.length === given.length && timingSafeEqual(expected, given)) valid = true;
      }
      if (!valid) throw new StateRejectedError('signature', 'signature does not verify');
      let body: unknown;
      try {
        body = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
      } catch {
        throw new StateRejectedError('malformed', 'payload is not JSON');
      }
      const b = body as { p?: unknown; exp?: unknown; b?: unknown };
      if (typeof body !== 'object' || body === null || typeof b.exp !== 'number' || typeof b.b !== 'string') {
        throw new StateRejectedError('malformed', 'payload has no expiry or binding');
      }
      if (now() > b.exp) throw new StateRejectedError('expired', 'expired');
      const expectedTag = Buffer.from(tag(binding), 'utf8');
      const givenTag = Buffer.from(b.b, 'utf8');
      if (expectedTag.length !== givenTag.length || !timingSafeEqual(expectedTag, givenTag)) {
        throw new StateRejectedError('binding', 'issued for a different request (tool, arguments or principal)');
      }
      return b.p;
    },
  };
}

/** What a sealed state is bound to. */
export interface BindingInput {
  /** `tools/call`, `prompts/get` or `resources/read`. */
  method: string;
  /** Tool or prompt name, or resource URI. */
  name: string;
  /** The request's arguments (digested: key order does not matter). */
  args: unknown;
  /** The principal: OAuth client id, else the session id; undefined when there is neither. */
  principal: string | undefined;
}

/**
 * The binding string of a request: method, name, a SHA-256 digest of the arguments in canonical
 * JSON (sorted keys), and the principal. A state sealed for one binding opens only for the same one.
 */
export function requestBinding(input: BindingInput): string {
  const digest = createHash('sha256').update(canonicalJson(input.args)).digest('base64url');
  return JSON.stringify(['mrtr/1', input.method, input.name, digest, input.principal ?? null]);
}

/**
 * Nesting depth (objects and arrays) {@link canonicalJson} accepts: 1 000 levels, as
 * `@mcp-tether/http` accepts in a request body. Deeper would overflow the stack of `JSON.stringify`.
 */
export const MAX_CANONICAL_DEPTH = 1_000;

/**
 * JSON with object keys sorted at every level (`undefined` members dropped, as JSON does).
 *
 * @throws ProtocolError `-32602` (invalid params) when `value` is nested deeper than
 *   {@link MAX_CANONICAL_DEPTH} (checked without recursion, before any is done).
 */
export function canonicalJson(value: unknown): string {
  assertDepth(value);
  return (
    JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
        const o = v as Record<string, unknown>;
        return Object.fromEntries(
          Object.keys(o)
            .sort()
            .map((k) => [k, o[k]]),
        );
      }
      return v;
    }) ?? 'null'
  );
}

/** Refuses a value nested deeper than {@link MAX_CANONICAL_DEPTH}, walking it without recursion. */
function assertDepth(value: unknown): void {
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [v, depth] = item;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= MAX_CANONICAL_DEPTH)
      throw new ProtocolError(
        JsonRpcErrorCode.InvalidParams,
        `Invalid params: arguments nested deeper than ${MAX_CANONICAL_DEPTH} levels`,
        { reason: 'too_deep', maxDepth: MAX_CANONICAL_DEPTH },
      );
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
}
