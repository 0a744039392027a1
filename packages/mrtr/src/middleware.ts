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
import {
  createStateSealer,
  requestBinding,
  StateRejectedError,
  type StateSealer,
  type StateSealerOptions,
} from './seal.js';
import { fieldNames } from './rounds.js';
import { checkResponse, isObject } from './validate.js';

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

/**
 * Where consumed `requestState`s are recorded (see {@link MrtrOptions.oneTime}).
 */
export interface ReplayStore {
  /**
   * Record `id` as consumed until `expiresAt` (ms since the epoch; it may be forgotten after).
   * @returns true the first time `id` is recorded, false when it already was (a replay)
   * @throws (or rejects) when the store is unreachable: the call then fails with a JSON-RPC error and nothing runs
   */
  consume(id: string, expiresAt: number): boolean | Promise<boolean>;
}

/**
 * The in-memory {@link ReplayStore}: one process. Entries are forgotten once expired (swept as new
 * ones arrive), so it holds at most the states consumed within one `ttlMs`.
 */
export class MemoryReplayStore implements ReplayStore {
  readonly #seen = new Map<string, number>();
  constructor(private readonly now: () => number = Date.now) {}
  consume(id: string, expiresAt: number): boolean {
    const now = this.now();
    // Entries arrive in roughly increasing expiry: drop expired ones from the oldest end.
    for (const [k, exp] of this.#seen) {
      if (exp >= now) break;
      this.#seen.delete(k);
    }
    const known = this.#seen.get(id);
    if (known !== undefined && known >= now) return false;
    this.#seen.set(id, expiresAt);
    return true;
  }
  /** Consumed states remembered now. */
  get size(): number {
    return this.#seen.size;
  }
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
  const oneTime: ReplayStore | undefined =
    options.oneTime === true
      ? new MemoryReplayStore(now)
      : options.oneTime === false || options.oneTime === undefined
        ? undefined
        : options.oneTime;
  if (
    oneTime !== undefined &&
    (typeof oneTime !== 'object' || oneTime === null || typeof oneTime.consume !== 'function')
  ) {
    throw new TypeError('mrtr: oneTime must be true, false or a ReplayStore (a consume(id, expiresAt) method)');
  }

  const tooManyRounds = (ctx: CallContext) => {
    if (diagnostics.mrtrRound.hasSubscribers) publishRound(ctx, maxRounds + 1, 'refused', []);
    return refuse(
      ctx,
      ErrorCode.MAX_ROUNDS,
      `Gave up asking the user: this call needed more than ${maxRounds} rounds of input.`,
      { maxRounds },
    );
  };

  // 2025 era. The first run needs no store (readers see no answers either way) and no async frame:
  // a call that never asks for input costs one reaction.
  const legacy = (ctx: CallContext, next: Next): Promise<CallResult> =>
    next().then((result) => (isInputRequired(result) ? serveLegacy(ctx, next, result) : result));

  const serveLegacy = async (ctx: CallContext, next: Next, first: CallResult): Promise<CallResult> => {
    const store: Store = { answers: new Map(), fields: new Map(), payload: undefined, round: 0 };
    ctx.state.set(STORE, store);
    for (let result: CallResult = first; ; result = await next()) {
      if (!isInputRequired(result)) return result;
      const round = store.round + 1;
      if (round > maxRounds) return tooManyRounds(ctx);
      const requests = inputRequestsOf(result);
      // All or nothing: check every request before anything goes on the wire.
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
        return refuse(
          ctx,
          ErrorCode.ELICITATION_UNSUPPORTED,
          unsupportedText(
            requests,
            `the client does not support ${describeCapabilities(missing)}`,
            `an MCP client that supports ${describeCapabilities(missing)}`,
          ),
          { requiredCapabilities: missing },
        );
      }
      if (result.requestState !== undefined) store.payload = jsonCopy(result.requestState);
      store.round = round;
      if (diagnostics.mrtrRound.hasSubscribers) publishRound(ctx, round, 'elicit', requests);
      for (const [key, request] of requests) {
        store.answers.delete(key);
        store.fields.set(key, fieldNames(request));
        const params = legacyParams(ctx, request);
        await ctx.emit({ type: 'input', key, request: { method: request.method, params }, round }, self);
        let raw: JsonObject;
        try {
          raw = await ctx.request(request.method, params, { timeout: timeoutMs });
        } catch (err) {
          if (ctx.abortReason !== undefined) throw ctx.abortReason;
          // SDK 1.x: McpError -32001 / -32000; SDK 2.x: SdkError 'REQUEST_TIMEOUT' / 'CONNECTION_CLOSED'.
          const code = (err as { code?: unknown })?.code;
          if (code === -32001 || code === 'REQUEST_TIMEOUT') {
            return refuse(ctx, ErrorCode.TIMEOUT, `The user did not answer within ${timeoutMs} ms.`, { timeoutMs });
          }
          if (code === -32000 || code === 'CONNECTION_CLOSED') throw err; // connection closed: nobody left to answer
          return refuse(
            ctx,
            ErrorCode.ELICITATION_UNSUPPORTED,
            `The client could not ask the user: ${(err as Error)?.message ?? String(err)}`,
          );
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
  };

  const modern = async (ctx: CallContext, next: Next): Promise<CallResult> => {
    const binding = bindingOf(ctx);
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
    if (oneTime && typeof ctx.requestState === 'string') {
      // Checked last: a retry refused above (malformed answers) has not used its state up.
      const token = ctx.requestState;
      let fresh: boolean;
      try {
        fresh = await oneTime.consume(token.slice(token.lastIndexOf('.') + 1), now() + sealer.ttlMs);
      } catch (err) {
        throw new ProtocolError(
          JsonRpcErrorCode.InternalError,
          `requestState could not be checked for reuse (the replay store is unavailable: ${(err as Error)?.message ?? String(err)}). Try again later.`,
          { code: 'STORE_UNAVAILABLE' },
        );
      }
      if (!fresh)
        throw new StateRejectedError(
          'replayed',
          'already used (each requestState is good for one retry; start the call again)',
        );
    }
    ctx.state.set(STORE, store);
    ctx.inputResponses = Object.fromEntries(store.answers);
    ctx.requestState = store.payload;

    const result = await next();
    if (!isInputRequired(result)) return result;
    const round = store.round + 1;
    if (round > maxRounds) return tooManyRounds(ctx);
    const requests = inputRequestsOf(result);
    const missing = missingCapabilities(ctx.clientCapabilities, requests);
    if (missing) {
      // 2026-07-28 basic/patterns/mrtr: never include a request type the client did not declare in
      // this request; if the server cannot proceed, -32021 with data.requiredCapabilities.
      throw new ProtocolError(
        JsonRpcErrorCode.MissingRequiredClientCapability,
        `Missing required client capability: ${describeCapabilities(missing)}`,
        { requiredCapabilities: missing },
      );
    }
    const payload = result.requestState !== undefined ? result.requestState : store.payload;
    const body: SealedBody = { r: round, q: {}, a: {}, f: {} };
    // A nonce: two rounds sealed alike in the same millisecond still make different states (one-time use tells them apart).
    if (oneTime) body.n = randomBytes(12).toString('base64url');
    if (payload !== undefined) body.p = payload;
    const asked = new Set(requests.map(([key]) => key));
    for (const [key, answer] of store.answers) {
      if (asked.has(key)) continue; // asked again: the old answer is dropped
      body.a[key] = answer;
      body.f[key] = store.fields.get(key) ?? [];
    }
    const wireRequests: Record<string, InputRequest> = {};
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
    const requestState = sealer.seal(body, binding);
    for (const [key, request] of Object.entries(wireRequests))
      await ctx.emit({ type: 'input', key, request, round }, self);
    if (diagnostics.mrtrRound.hasSubscribers) publishRound(ctx, round, 'input_required', requests);
    const wire: CallResult = { resultType: 'input_required' };
    if (requests.length > 0) wire.inputRequests = wireRequests;
    wire.requestState = requestState;
    if (isObject(result._meta)) wire._meta = result._meta;
    return wire;
  };

  const self: Middleware = {
    name: 'mrtr',
    // Handlers read their answers with free functions (readInput(), readInputResult(), canElicit()):
    // the server's calls run in async context. tether(..., { asyncContext: false }) turns it off
    // for handlers that pass ctx to them.
    asyncContext: true,
    handle: (ctx, next) => (ctx.era === 'modern' ? modern(ctx, next) : legacy(ctx, next)),
  };
  return self;
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

/**
 * What the client must declare for these requests and does not, or undefined when it has all.
 * Elicitation modes follow 2025-11-25: `elicitation: {}` means form only; `{ form: {} }`, `{ url: {} }`.
 */
export function missingCapabilities(
  caps: JsonObject,
  requests: ReadonlyArray<[string, InputRequest]>,
): JsonObject | undefined {
  const missing: JsonObject = {};
  for (const [, request] of requests) {
    if (request.method === 'elicitation/create') {
      const mode = request.params?.mode === 'url' ? 'url' : 'form';
      if (!supportsElicitation(caps, mode)) {
        if (missing.elicitation === undefined) missing.elicitation = {};
        (missing.elicitation as JsonObject)[mode] = {};
      }
    } else if (request.method === 'sampling/createMessage') {
      if (!isObject(caps.sampling)) missing.sampling = {};
    } else if (request.method === 'roots/list') {
      if (!isObject(caps.roots)) missing.roots = {};
    }
  }
  return Object.keys(missing).length ? missing : undefined;
}

/**
 * The refusal a call gets when its input requests need a capability the client did not declare, the
 * same one `mrtr()` gives a plain call, by era: on 2026-07-28 `{ error }`, a `ProtocolError` `-32021`
 * (`MissingRequiredClientCapability`) with `data.requiredCapabilities`; on 2025 `{ result }`, the
 * `ELICITATION_UNSUPPORTED` refusal (an `isError` tool result; a `{ error }` for prompts and
 * resources). `undefined` when the client declared all it needs. For fronts that would otherwise ask
 * later (a task's `input_required`, `@mcp-tether/jobs`): never ask a client in a mode it did not declare.
 */
export function capabilityRefusal(
  ctx: CallContext,
  requests: ReadonlyArray<[string, InputRequest]>,
): { error: ProtocolError } | { result: CallResult } | undefined {
  const missing = missingCapabilities(ctx.clientCapabilities, requests);
  if (!missing) return undefined;
  if (ctx.era === 'modern') {
    return {
      error: new ProtocolError(
        JsonRpcErrorCode.MissingRequiredClientCapability,
        `Missing required client capability: ${describeCapabilities(missing)}`,
        { requiredCapabilities: missing },
      ),
    };
  }
  try {
    return {
      result: refuse(
        ctx,
        ErrorCode.ELICITATION_UNSUPPORTED,
        unsupportedText(
          requests,
          `the client does not support ${describeCapabilities(missing)}`,
          `an MCP client that supports ${describeCapabilities(missing)}`,
        ),
        { requiredCapabilities: missing },
      ),
    };
  } catch (err) {
    return { error: err as ProtocolError };
  }
}

/** True when client capabilities `caps` allow an elicitation in `mode`. */
export function supportsElicitation(caps: JsonObject, mode: 'form' | 'url'): boolean {
  const e = caps.elicitation;
  if (!isObject(e)) return false;
  const form = isObject(e.form);
  const url = isObject(e.url);
  return mode === 'url' ? url : form || (!form && !url);
}

function describeCapabilities(missing: JsonObject): string {
  const parts: string[] = [];
  if (isObject(missing.elicitation))
    for (const mode of Object.keys(missing.elicitation)) parts.push(`${mode}-mode elicitation`);
  if (missing.sampling) parts.push('sampling');
  if (missing.roots) parts.push('roots');
  return parts.join(', ');
}

/**
 * The refusal text the model reads when input cannot be asked for: what the tool wanted to ask
 * (so the model can tell the user), that calling again the same way cannot succeed, and the two
 * ways out (arguments that carry the answer, if the tool has them; another client or connection).
 */
function unsupportedText(requests: ReadonlyArray<[string, InputRequest]>, why: string, needs: string): string {
  const asked = requests.map(([, r]) => describeRequest(r)).join('; ');
  return (
    `This tool needs an answer from the user (${asked}), but ${why}, so it cannot ask. ` +
    'Calling it again with the same arguments gets this same refusal. ' +
    "If the tool's input schema has arguments for that answer, ask the user in the conversation and call it again with them; " +
    `otherwise tell the user this step needs ${needs}.`
  );
}

function describeRequest(request: InputRequest): string {
  const p = request.params ?? {};
  if (request.method === 'sampling/createMessage') return 'a model completion through the client (sampling)';
  if (request.method === 'roots/list') return "the client's roots";
  const message = typeof p.message === 'string' ? JSON.stringify(p.message) : 'a question';
  // The URL itself is for the user's eyes only (it may carry a one-time state): not given to the model.
  if (p.mode === 'url') return `${message}, on a web page the client would open for the user`;
  const fields = fieldNames(request);
  return fields.length ? `${message}, fields: ${fields.join(', ')}` : message;
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
