/**
 * Per-attached-server bookkeeping both adapters share: finding the calls in flight by request id, the
 * `notifications/cancelled` rules, the `initialize` guard, response suppression and close hooks.
 *
 * The SDKs (1.x and 2.x alike) abort their per-request controller in two places only: their
 * `notifications/cancelled` handler (replaced by {@link Connection.cancelled}) and `_onclose`
 * (wrapped by {@link Connection.wrapClose}). So a call follows the SDK without listening on the
 * SDK's signal: it is checked once when the call starts, and both abort paths reach the call directly.
 * The rest of what both adapters do alike (the attach recipe) is `attach.ts`.
 */
import { ClientCancelled, Disconnected, isCallAbortReason, type CallAbortReason } from '../abort.js';
import type { Call } from '../call.js';
import type { Chain } from '../engine.js';
import type { CallResult, RequestId } from '../types.js';

/** Where a call is found from the SDK's per-request abort controller (a property of that controller). */
const CALL = Symbol('mcp-tether.call');
type Tagged = AbortController & { [CALL]?: Call | undefined };

export class Connection {
  /**
   * Calls in the chain are found by request id through the SDK's own controller map (each call is
   * a property of its request's controller): no map of ours to add to and delete from per call
   * (a V8 hash table reallocates its storage when it empties). `orphans` holds the rare call whose
   * request has no SDK controller.
   */
  private readonly orphans = new Map<RequestId, Call>();
  /**
   * Ids of `initialize` requests still guarded (see {@link Connection.guardInitialize}): an array,
   * as it holds one id at most in practice: each request checks it, and a Set's `delete` on every
   * request cost ~60 instructions per call.
   */
  private readonly initializing: RequestId[] = [];
  /** Client reasons of cancels that arrived before the call entered the chain, by the SDK's signal. */
  private readonly earlyCancels = new WeakMap<AbortSignal, CallAbortReason>();
  private readonly closeHooks: Array<() => void> = [];

  /**
   * @param controllers the SDK's per-request abort controllers (`_requestHandlerAbortControllers`;
   *   read each time: SDK 2.x replaces the map on close)
   * @param reportError where failing close hooks are reported
   */
  constructor(
    private readonly controllers: () => Map<RequestId, AbortController>,
    private readonly reportError: (error: unknown) => void,
  ) {}

  /**
   * Run one call through `chain` around `invoke` (the SDK's own handler). When the chain settles the
   * call completes and leaves, and `onResult` turns its result into what the SDK gets: one reaction
   * per call. `sdkSignal` is the SDK's signal for the request (see {@link Connection.enter}).
   */
  run(
    call: Call,
    sdkSignal: AbortSignal,
    chain: Chain,
    invoke: () => Promise<CallResult>,
    onResult: (result: CallResult) => unknown,
  ): Promise<unknown> {
    this.enter(call, sdkSignal);
    return chain.run(
      call,
      invoke,
      (result) => this.finish(call, chain, result, false, onResult),
      (err: unknown) => this.finish(call, chain, err, true, onResult),
    );
  }

  /** The chain settled: the `onEnd` hooks (awaited only if one returned a promise), then {@link Connection.close}. */
  private finish(
    call: Call,
    chain: Chain,
    outcome: unknown,
    failed: boolean,
    onResult: (result: CallResult) => unknown,
  ): unknown {
    const ending = chain.end(call);
    if (ending === undefined) return this.close(call, outcome, failed, onResult);
    return ending.then(() => this.close(call, outcome, failed, onResult));
  }

  /** The call completes and leaves; its result goes through `onResult`, its error on to the SDK. */
  private close(call: Call, outcome: unknown, failed: boolean, onResult: (result: CallResult) => unknown): unknown {
    this.end(call);
    if (failed) throw outcome;
    return onResult(outcome as CallResult);
  }

  /**
   * A call enters the chain. `sdkSignal` is the SDK's signal for the request: if a cancel or a close
   * already aborted it, the call starts aborted (the chain gate stops it), with the client's reason.
   */
  private enter(call: Call, sdkSignal: AbortSignal): void {
    const controller = this.controllers().get(call.requestId) as Tagged | undefined;
    if (controller !== undefined && controller.signal === sdkSignal) controller[CALL] = call;
    else this.orphans.set(call.requestId, call);
    if (sdkSignal.aborted) {
      const reason: unknown = sdkSignal.reason;
      call.abort(
        this.earlyCancels.get(sdkSignal) ??
          (isCallAbortReason(reason) ? reason : new Disconnected(reason instanceof Error ? reason.message : undefined)),
      );
    }
  }

  /** The call left the chain: nothing more may be sent for it; its result, if any, goes to the SDK now. */
  private end(call: Call): void {
    call.complete();
    const controller = this.controllers().get(call.requestId) as Tagged | undefined;
    if (controller !== undefined && controller[CALL] === call) controller[CALL] = undefined;
    else if (this.orphans.get(call.requestId) === call) this.orphans.delete(call.requestId);
  }

  /** The call in the chain for this request id, if any. */
  private find(id: RequestId): Call | undefined {
    return (this.controllers().get(id) as Tagged | undefined)?.[CALL] ?? this.orphans.get(id);
  }

  /**
   * Suppress the response of an aborted call: the SDK drops a handler's result once its controller
   * for the request is aborted (spec `basic/utilities/cancellation`: no response after a cancel).
   */
  suppress(call: Call, sdkSignal: AbortSignal, reason: CallAbortReason): void {
    const controller = this.controllers().get(call.requestId);
    if (controller && controller.signal === sdkSignal && !controller.signal.aborted) controller.abort(reason);
  }

  /**
   * Wrap the SDK's `_onrequest` (where a request enters, synchronously on arrival): an `initialize`
   * is marked at once, so a cancel that arrives in the same read, before its handler had a turn,
   * is ignored too (SDK 1.x runs the handler two microtasks later, its cancel handler one).
   */
  wrapOnRequest<X>(
    onrequest: (request: { method?: unknown; id?: unknown }, extra: X) => void,
  ): (request: { method?: unknown; id?: unknown }, extra: X) => void {
    return (request, extra) => {
      const id = request?.id;
      if (typeof id === 'string' || typeof id === 'number') {
        if (request?.method === 'initialize') this.guard(id);
        // The client reuses an initialize's id only once it got that response: the guard can go.
        else {
          const ini = this.initializing;
          // In practice one id at most (the session's initialize): compared directly.
          if (ini.length === 1 ? ini[0] === id : ini.length !== 0) {
            const i = ini.indexOf(id);
            if (i >= 0) ini.splice(i, 1);
          }
        }
      }
      onrequest(request, extra);
    };
  }

  private guard(id: RequestId): void {
    if (!this.initializing.includes(id)) this.initializing.push(id);
  }

  /**
   * Wrap the SDK's `initialize` handler: a cancel for its id is ignored (the client MUST NOT cancel
   * `initialize`) from its arrival until the client sends another request with that id, or the
   * connection closes — not only while the handler runs: SDK 2.x writes the response a few
   * microtasks after the handler returned, and a cancel in between would still suppress it.
   */
  guardInitialize<Q, X>(
    init: (request: Q, extra: X) => Promise<unknown>,
    idOf: (extra: X) => RequestId,
  ): (request: Q, extra: X) => Promise<unknown> {
    return (request, extra) => {
      this.guard(idOf(extra));
      return init(request, extra);
    };
  }

  /**
   * The `notifications/cancelled` handler: the client's reason becomes a {@link ClientCancelled};
   * a cancel of `initialize`, of an unknown id, or without a usable id is ignored (never throws).
   * A cancel that arrives before the call entered the chain aborts the SDK's controller (the call
   * then starts aborted, see {@link Connection.enter}); this also honours request id `0`, which
   * SDK 1.32.2's own handler ignores (#2654).
   */
  cancelled(notification: { params?: unknown } | undefined): void {
    const p = notification?.params as { requestId?: unknown; reason?: unknown } | undefined;
    const id = p?.requestId;
    if (typeof id !== 'string' && typeof id !== 'number') return; // malformed, or a task cancel
    if (this.initializing.includes(id)) return;
    const reason = new ClientCancelled(typeof p?.reason === 'string' ? p.reason : undefined);
    const call = this.find(id);
    if (call) {
      call.abort(reason);
      return;
    }
    const controller = this.controllers().get(id);
    if (controller && !controller.signal.aborted) {
      this.earlyCancels.set(controller.signal, reason);
      controller.abort(reason);
    }
  }

  /** Run `fn` when the connection closes. */
  onClose(fn: () => void): void {
    this.closeHooks.push(fn);
  }

  /** Abort every call in flight with `reason` (see {@link abortCalls}); returns how many were running. */
  abortAll(reason: CallAbortReason): number {
    const inFlight = this.inFlight();
    for (const call of inFlight) call.abort(reason);
    return inFlight.length;
  }

  private inFlight(): Call[] {
    const inFlight: Call[] = [...this.orphans.values()];
    for (const c of this.controllers().values()) {
      const call = (c as Tagged)[CALL];
      if (call !== undefined) inFlight.push(call);
    }
    return inFlight;
  }

  /**
   * Wrap the SDK's `_onclose`: calls in flight abort with {@link Disconnected} (before the SDK aborts
   * its own controllers), then close hooks run, once per connection (some transports, such as the
   * SDK's `InMemoryTransport`, report one close twice).
   */
  wrapClose(onclose: () => void, connected: () => boolean): () => void {
    return () => {
      const wasConnected = connected();
      // The reason is made only for calls to abort: an Error's stack costs ~40 000 instructions, and
      // the server of every 2026-07-28 request closes with nothing in flight (issue 28).
      if (wasConnected) {
        const inFlight = this.inFlight();
        if (inFlight.length > 0) {
          const reason = new Disconnected();
          for (const call of inFlight) call.abort(reason);
        }
      }
      onclose();
      this.initializing.length = 0;
      if (!wasConnected) return;
      for (const fn of this.closeHooks) {
        try {
          fn();
        } catch (err) {
          this.reportError(err);
        }
      }
    };
  }
}

/** The connection of each attached `McpServer` (either SDK line), for {@link abortCalls}. */
const CONNECTIONS = new WeakMap<object, Connection>();

/** Remember `conn` as the connection of the tethered `mcp` server (both adapters call it). */
export function registerConnection(mcp: object, conn: Connection): void {
  CONNECTIONS.set(mcp, conn);
}

/**
 * Abort every call in flight on a tethered server (an `McpServer` of either SDK line that went
 * through `tether()`) with `reason`, e.g. `new ShuttingDown()` before a front closes its sessions,
 * so handlers see `signal.reason.kind === 'shutdown'` instead of `disconnect`. Unless
 * `reason.respond`, no response is sent for those calls (answer them yourself if you must).
 * @returns how many calls were aborted (0 for a server tether() never saw)
 */
export function abortCalls(server: object, reason: CallAbortReason): number {
  return CONNECTIONS.get(server)?.abortAll(reason) ?? 0;
}
