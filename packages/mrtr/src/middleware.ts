/**
 * The `mrtr()` middleware: serves a handler's `input_required` outcome on every protocol era.
 *
 * - 2025-era session (`ctx.era === 'legacy'`) with a live channel and the client's capability:
 *   sends each input request as a real server→client request related to the call (so on Streamable
 *   HTTP it rides the call's POST stream), bound to the call's signal, with a timeout; validates the
 *   answers; runs the inner chain and the handler again with them. Nothing is sealed: the state
 *   never leaves the process.
 * - 2026-07-28 request (`ctx.era === 'modern'`): opens and verifies the sealed `requestState` of a
 *   retry, validates `inputResponses` against what was asked, runs the handler, and turns a new
 *   `input_required` outcome into the wire result with a freshly sealed `requestState`. The client
 *   drives the retry.
 *
 * Beside it: what the client declared it can answer is checked in `capabilities.ts`, one-time states
 * (replay protection) are `replay.ts`, sealing is `seal.ts`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  diagnostics,
  ErrorCode,
  isInputRequired,
  JsonRpcErrorCode,
  ProtocolError,
  refuse,
  type CallContext,
  type CallResult,
  type InputRequest,
  type JsonObject,
  type Middleware,
  type Next,
} from '@mcp-tether/core';
import { STORE, type Store } from './input.js';

/** `tether:mrtr:round`: a round of input was asked (or refused). */
function publishRound(
  ctx: CallContext,
  round: number,
  mode: 'input_required' | 'elicit' | 'refused',
  requests: ReadonlyArray<readonly [string, unknown]>,
): void {
  diagnostics.mrtrRound.publish({ ctx, round, mode, keys: requests.map(([key]) => key) });
}
import { createStateSealer, requestBinding, type StateSealer, type StateSealerOptions } from './seal.js';
import { fieldNames } from './rounds.js';
import { checkResponse, isObject } from './validate.js';
import {
  missingCapabilities,
  missingCapabilityError,
  missingCapabilityRefusal,
  unsupportedText,
} from './capabilities.js';
import { consumeState, type ReplayStore, replayStoreOf } from './replay.js';

/** Options of {@link mrtr}. */
export interface MrtrOptions extends StateSealerOptions {
  /**
   * Most rounds of input one call may take (a round = the handler returning `input_required` once).
   * The next round past it ends the call with a `MAX_ROUNDS` refusal. Default 8.
   */
  maxRounds?: number;
  /**
   * 2025 era: how long to wait for the user to answer one elicitation, in ms. Past it the call ends
   * with a `TIMEOUT` refusal and the client is told to withdraw the request. Default 600 000 (10 min).
   * The client's own timeout for the tool call still runs: see the README.
   */
  timeoutMs?: number;
  /** A sealer to use instead of one built from `keys`/`ttlMs`/`maxBytes`. */
  sealer?: StateSealer;
  /**
   * 2026-07-28: make each `requestState` good for one retry. The store records every state a retry
   * consumed until the state would have expired; a second retry with the same state (another
   * client replaying a captured one, with its own answers) is refused with `-32602`
   * (`data.reason: 'replayed'`) and the handler does not run. `true` is a {@link MemoryReplayStore}
   * (one process); several replicas share a store (`RedisReplayStore` of `@mcp-tether/redis`).
   * Default: off (a state may be replayed for the same tool, arguments and principal until it expires).
   */
  oneTime?: boolean | ReplayStore;
}

/** @internal What travels inside the sealed requestState (2026-07-28). */
interface SealedBody {
  /** Rounds served so far. */
  r: number;
  /** The handler's continuation payload. */
  p?: unknown;
  /** Requests of the last round, to validate the retry's inputResponses: key → what was asked. */
  q: Record<string, { m: InputRequest['method']; mode?: string; s?: unknown }>;
  /** Validated answers of earlier rounds: key → response. */
  a: Record<string, JsonObject>;
  /** Field names per key (for keys in `q` and `a`). */
  f: Record<string, string[]>;
  /** Nonce (with one-time states). */
  n?: string;
}

/**
 * Serve `input_required` outcomes (made by `requireInput.*`) on every era. Install it once, outside
 * middlewares that should run once per call (it re-runs everything inside it each round).
 *
 * Errors, by era:
 * - 2025: no live channel (stateless HTTP) or the client lacks the capability/mode →
 *   `ELICITATION_UNSUPPORTED` refusal, at once, nothing sent; the client answers with a JSON-RPC
 *   error → `ELICITATION_UNSUPPORTED`; no answer within `timeoutMs` → `TIMEOUT`.
 * - 2026-07-28: a tampered, expired, foreign or oversized `requestState` (with `oneTime`, also one
 *   already used) → JSON-RPC `-32602` (the handler does not run); malformed `inputResponses` → `-32602`; the request's client
 *   capabilities lack what the handler asks for → `-32021` with `data.requiredCapabilities`.
 * - Both: more than `maxRounds` rounds → `MAX_ROUNDS` refusal.
 * Refusals are `isError` tool results (JSON-RPC errors with `data.code` for prompts and resources).
 *
 * @throws TypeError for bad options (e.g. a sealing key shorter than 32 bytes)
 */
export function mrtr(options: MrtrOptions = {}): Middleware {
  const maxRounds = options.maxRounds ?? 8;
  const timeoutMs = options.timeoutMs ?? 600_000;
  if (!Number.isInteger(maxRounds) || maxRounds < 1)
    throw new TypeError('mrtr: maxRounds must be an integer of at least 1');
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new TypeError('mrtr: timeoutMs must be a positive number of ms');
  const sealer = options.sealer ?? createStateSealer(options);
  const now = options.now ?? Date.now;
  const m: Mrtr = { maxRounds, timeoutMs, sealer, now, oneTime: replayStoreOf(options.oneTime, now), self: NO_SELF };
  // 2025 era. The first run needs no store (readers see no answers either way) and no async frame:
  // a call that never asks for input costs one reaction. A closure of the instance (not a module
  // function taking `m`): its reaction then captures only `ctx` and `next`, as before the split.
  const legacy = (ctx: CallContext, next: Next): Promise<CallResult> =>
    next().then((result) => (isInputRequired(result) ? serveLegacy(m, ctx, next, result) : result));
  m.self = {
    name: 'mrtr',
    // Handlers read their answers with free functions (readInput(), readInputResult(), canElicit()):
    // the server's calls run in async context. tether(..., { asyncContext: false }) turns it off
    // for handlers that pass ctx to them.
    asyncContext: true,
    handle: (ctx, next) => (ctx.era === 'modern' ? modern(m, ctx, next) : legacy(ctx, next)),
  };
  return m.self;
}

/** The settings of one `mrtr()` instance, read by its parts. */
interface Mrtr {
  readonly maxRounds: number;
  /** 2025 era: ms to wait for one answer. */
  readonly timeoutMs: number;
  readonly sealer: StateSealer;
  readonly now: () => number;
  /** One-time states (2026-07-28), if on. */
  readonly oneTime: ReplayStore | undefined;
  /** The middleware itself (the source of the `input` events it emits). */
  self: Middleware;
}

/** `Mrtr.self` until the middleware is made. */
const NO_SELF: Middleware = { name: 'mrtr' };

/** More than `maxRounds` rounds: the call ends with a `MAX_ROUNDS` refusal. */
function tooManyRounds(m: Mrtr, ctx: CallContext): CallResult {
  const { maxRounds } = m;
  if (diagnostics.mrtrRound.hasSubscribers) publishRound(ctx, maxRounds + 1, 'refused', []);
  return refuse(
    ctx,
    ErrorCode.MAX_ROUNDS,
    `Gave up asking the user: this call needed more than ${maxRounds} rounds of input.`,
    { maxRounds },
  );
}

/** 2025 era: ask each round's requests over the live channel and run the chain again with the answers. */
async function serveLegacy(m: Mrtr, ctx: CallContext, next: Next, first: CallResult): Promise<CallResult> {
  const store: Store = { answers: new Map(), fields: new Map(), payload: undefined, round: 0 };
  ctx.state.set(STORE, store);
  for (let result: CallResult = first; ; result = await next()) {
    if (!isInputRequired(result)) return result;
    const round = store.round + 1;
    if (round > m.maxRounds) return tooManyRounds(m, ctx);
    const requests = inputRequestsOf(result);
    const refusal = legacyRefusal(ctx, round, requests);
    if (refusal !== undefined) return refusal;
    if (result.requestState !== undefined) store.payload = jsonCopy(result.requestState);
    store.round = round;
    if (diagnostics.mrtrRound.hasSubscribers) publishRound(ctx, round, 'elicit', requests);
    for (const [key, request] of requests) {
      store.answers.delete(key);
      store.fields.set(key, fieldNames(request));
      const params = legacyParams(ctx, request);
      await ctx.emit({ type: 'input', key, request: { method: request.method, params }, round }, m.self);
      let raw: JsonObject;
      try {
        raw = await ctx.request(request.method, params, { timeout: m.timeoutMs });
      } catch (err) {
        return unanswered(m, ctx, err);
      }
      const checked = checkResponse(raw, request);
      // Invalid content is dropped: the handler does not see an answer and asks again (next round).
      if (checked.ok) store.answers.set(key, checked.answer);
      // A decline or cancel ends the round: the handler decides what to do about it.
      if (checked.ok && request.method === 'elicitation/create' && checked.answer.action !== 'accept') break;
    }
    ctx.inputResponses = Object.fromEntries(store.answers);
    ctx.requestState = store.payload;
  }
}

/**
 * 2025 era: the refusal of a round that cannot be asked (no live channel, or the client lacks a
 * capability), or `undefined`. All or nothing: every request is checked before anything goes on the wire.
 */
function legacyRefusal(
  ctx: CallContext,
  round: number,
  requests: ReadonlyArray<[string, InputRequest]>,
): CallResult | undefined {
  if (requests.length > 0 && !ctx.channel) {
    if (diagnostics.mrtrRound.hasSubscribers) publishRound(ctx, round, 'refused', requests);
    return refuse(
      ctx,
      ErrorCode.ELICITATION_UNSUPPORTED,
      unsupportedText(
        requests,
        'this connection cannot carry requests to the client (stateless HTTP, no session)',
        'a connection with a session (stdio or stateful Streamable HTTP)',
      ),
    );
  }
  const missing = missingCapabilities(ctx.clientCapabilities, requests);
  if (missing) {
    if (diagnostics.mrtrRound.hasSubscribers) publishRound(ctx, round, 'refused', requests);
    return missingCapabilityRefusal(ctx, requests, missing);
  }
  return undefined;
}

/**
 * 2025 era: an input request failed: the call ends with a refusal (`TIMEOUT`, `ELICITATION_UNSUPPORTED`).
 * @throws the call's abort reason if it was aborted; `err` if the connection closed (nobody left to answer)
 */
function unanswered(m: Mrtr, ctx: CallContext, err: unknown): CallResult {
  if (ctx.abortReason !== undefined) throw ctx.abortReason;
  // SDK 1.x: McpError -32001 / -32000; SDK 2.x: SdkError 'REQUEST_TIMEOUT' / 'CONNECTION_CLOSED'.
  const code = (err as { code?: unknown })?.code;
  if (code === -32001 || code === 'REQUEST_TIMEOUT') {
    const { timeoutMs } = m;
    return refuse(ctx, ErrorCode.TIMEOUT, `The user did not answer within ${timeoutMs} ms.`, { timeoutMs });
  }
  if (code === -32000 || code === 'CONNECTION_CLOSED') throw err; // connection closed: nobody left to answer
  return refuse(
    ctx,
    ErrorCode.ELICITATION_UNSUPPORTED,
    `The client could not ask the user: ${(err as Error)?.message ?? String(err)}`,
  );
}

/** 2026-07-28: open the retry's state, run the chain, turn a new `input_required` into the wire result. */
async function modern(m: Mrtr, ctx: CallContext, next: Next): Promise<CallResult> {
  const binding = bindingOf(ctx);
  const store = retryStore(m.sealer, ctx, binding);
  if (m.oneTime && typeof ctx.requestState === 'string') {
    // Checked last: a retry refused above (malformed answers) has not used its state up.
    await consumeState(m.oneTime, ctx.requestState, m.now() + m.sealer.ttlMs);
  }
  ctx.state.set(STORE, store);
  ctx.inputResponses = Object.fromEntries(store.answers);
  ctx.requestState = store.payload;

  const result = await next();
  if (!isInputRequired(result)) return result;
  const round = store.round + 1;
  if (round > m.maxRounds) return tooManyRounds(m, ctx);
  const requests = inputRequestsOf(result);
  const missing = missingCapabilities(ctx.clientCapabilities, requests);
  // 2026-07-28: never ask for what the client did not declare in this request (-32021).
  if (missing) throw missingCapabilityError(missing);
  const wireRequests: Record<string, InputRequest> = {};
  const body = sealedBody(m, store, result, requests, round, wireRequests);
  const requestState = m.sealer.seal(body, binding);
  for (const [key, request] of Object.entries(wireRequests))
    await ctx.emit({ type: 'input', key, request, round }, m.self);
  if (diagnostics.mrtrRound.hasSubscribers) publishRound(ctx, round, 'input_required', requests);
  const wire: CallResult = { resultType: 'input_required' };
  if (requests.length > 0) wire.inputRequests = wireRequests;
  wire.requestState = requestState;
  if (isObject(result._meta)) wire._meta = result._meta;
  return wire;
}

/**
 * 2026-07-28: the answers so far: the retry's sealed state opened, its `inputResponses` checked
 * against what was asked.
 * @throws ProtocolError (-32602) for a bad `requestState` or malformed `inputResponses`
 */
function retryStore(sealer: StateSealer, ctx: CallContext, binding: string): Store {
  const prior = ctx.requestState === undefined ? emptyBody() : parseBody(sealer.open(ctx.requestState, binding));
  const rawResponses: unknown = ctx.inputResponses;
  if (rawResponses !== undefined && !isObject(rawResponses)) {
    throw new ProtocolError(
      JsonRpcErrorCode.InvalidParams,
      'inputResponses must be an object keyed like inputRequests',
    );
  }
  const store: Store = {
    answers: new Map(Object.entries(prior.a)),
    fields: new Map(Object.entries(prior.f)),
    payload: prior.p,
    round: prior.r,
  };
  // Only keys that were asked count; unknown extra keys are ignored (spec SHOULD).
  for (const [key, asked] of Object.entries(prior.q)) {
    const response = rawResponses?.[key];
    if (response === undefined) continue; // missing: the handler asks again
    const params: JsonObject = {};
    if (asked.mode !== undefined) params.mode = asked.mode;
    if (asked.s !== undefined) params.requestedSchema = asked.s;
    const checked = checkResponse(response, { method: asked.m, params });
    if (!checked.ok && checked.malformed) {
      throw new ProtocolError(
        JsonRpcErrorCode.InvalidParams,
        `inputResponses[${JSON.stringify(key)}]: ${checked.reason}`,
      );
    }
    if (checked.ok) {
      store.answers.delete(key);
      store.answers.set(key, checked.answer);
    }
  }
  return store;
}

/**
 * 2026-07-28: what the next retry's `requestState` carries (earlier answers, what this round asks),
 * filling `wireRequests` with this round's requests as the wire result embeds them.
 */
function sealedBody(
  m: Mrtr,
  store: Store,
  result: CallResult,
  requests: ReadonlyArray<[string, InputRequest]>,
  round: number,
  wireRequests: Record<string, InputRequest>,
): SealedBody {
  const payload = result.requestState !== undefined ? result.requestState : store.payload;
  const body: SealedBody = { r: round, q: {}, a: {}, f: {} };
  // A nonce: two rounds sealed alike in the same millisecond still make different states (one-time use tells them apart).
  if (m.oneTime) body.n = randomBytes(12).toString('base64url');
  if (payload !== undefined) body.p = payload;
  const asked = new Set(requests.map(([key]) => key));
  for (const [key, answer] of store.answers) {
    if (asked.has(key)) continue; // asked again: the old answer is dropped
    body.a[key] = answer;
    body.f[key] = store.fields.get(key) ?? [];
  }
  for (const [key, request] of requests) {
    const params = modernParams(request);
    wireRequests[key] = params === undefined ? { method: request.method } : { method: request.method, params };
    const q: SealedBody['q'][string] = { m: request.method };
    if (request.method === 'elicitation/create') {
      q.mode = typeof params?.mode === 'string' ? params.mode : 'form';
      if (q.mode === 'form') q.s = params?.requestedSchema;
    }
    body.q[key] = q;
    body.f[key] = fieldNames(request);
  }
  return body;
}

/** The binding a sealed state of this call is tied to: method, name, arguments digest, principal (OAuth client id, else session id). */
export function bindingOf(ctx: Pick<CallContext, 'method' | 'name' | 'args' | 'principal' | 'sessionId'>): string {
  return requestBinding({
    method: ctx.method,
    name: ctx.name,
    args: ctx.args,
    principal: ctx.principal ?? ctx.sessionId,
  });
}

function emptyBody(): SealedBody {
  return { r: 0, q: {}, a: {}, f: {} };
}

/** The opened body was sealed by us; still read it defensively. */
function parseBody(opened: unknown): SealedBody {
  const o = isObject(opened) ? opened : {};
  const body: SealedBody = {
    r: typeof o.r === 'number' && Number.isInteger(o.r) && o.r >= 0 ? o.r : 0,
    q: isObject(o.q) ? (o.q as SealedBody['q']) : {},
    a: isObject(o.a) ? (o.a as SealedBody['a']) : {},
    f: isObject(o.f) ? (o.f as SealedBody['f']) : {},
  };
  if ('p' in o) body.p = o.p;
  return body;
}

const INPUT_METHODS = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);

/**
 * The outcome's input requests as `[key, request]` pairs.
 * @throws TypeError for a malformed outcome (a server bug: it becomes a JSON-RPC internal error)
 */
function inputRequestsOf(result: { inputRequests?: unknown }): Array<[string, InputRequest]> {
  if (result.inputRequests === undefined) return [];
  if (!isObject(result.inputRequests)) throw new TypeError('mrtr: inputRequests must be an object keyed by input key');
  return Object.entries(result.inputRequests).map(([key, r]) => {
    if (!isObject(r) || typeof r.method !== 'string' || !INPUT_METHODS.has(r.method)) {
      throw new TypeError(
        `mrtr: inputRequests[${JSON.stringify(key)}] must be an elicitation/create, sampling/createMessage or roots/list request`,
      );
    }
    if (r.params !== undefined && !isObject(r.params))
      throw new TypeError(`mrtr: inputRequests[${JSON.stringify(key)}].params must be an object`);
    return [key, r as unknown as InputRequest];
  });
}

/** Params as a 2025-era client expects them. */
function legacyParams(ctx: CallContext, request: InputRequest): JsonObject {
  const params: JsonObject = { ...request.params };
  if (request.method === 'elicitation/create') {
    if (params.mode === 'url') {
      // 2025-11-25 URL mode requires an elicitationId (gone in 2026-07-28).
      if (typeof params.elicitationId !== 'string') params.elicitationId = randomUUID();
    } else if (ctx.protocolVersion !== undefined && ctx.protocolVersion < '2025-11-25') {
      delete params.mode; // no `mode` before 2025-11-25
    }
  }
  return params;
}

/** Params as 2026-07-28 embeds them (no elicitationId in URL mode). */
function modernParams(request: InputRequest): JsonObject | undefined {
  if (request.params === undefined) return undefined;
  const params: JsonObject = { ...request.params };
  if (request.method === 'elicitation/create' && params.mode === 'url') delete params.elicitationId;
  return params;
}

function jsonCopy(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : JSON.parse(text);
  } catch (err) {
    throw new TypeError(`mrtr: requestState is not JSON-serializable (${(err as Error).message})`);
  }
}
