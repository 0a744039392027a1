/**
 * A stand-in for the 2026-07-28 (v2) adapter, for unit tests of the modern path ONLY: there is no
 * modern wire path yet (the v2 adapter is being written). It builds the per-call context by hand,
 * the way the adapter will (era 'modern', raw `requestState` and `inputResponses` from params,
 * per-request client capabilities, no channel), runs the middleware's `handle` around the handler
 * inside core's AsyncLocalStorage, and JSON-round-trips what crosses the "wire".
 */
import type { AsyncLocalStorage } from 'node:async_hooks';
import { ProtocolError, type CallContext, type CallResult, type JsonObject, type Middleware, type OutboundEvent, type ServerHost } from '@mcp-tether/core';

// Core keeps its call-context store on globalThis under this symbol (src/als.ts); importing core above created it.
const als = (globalThis as unknown as Record<symbol, AsyncLocalStorage<CallContext>>)[Symbol.for('mcp-tether.call-context')]!;

export interface ModernRequest {
  name: string;
  args?: JsonObject;
  /** `_meta["io.modelcontextprotocol/clientCapabilities"]` */
  capabilities?: JsonObject;
  principal?: string;
  requestState?: unknown;
  inputResponses?: unknown;
}

export type Handler = (args: JsonObject, ctx: CallContext) => Promise<CallResult> | CallResult;

let ids = 0;
const wire = <T>(v: T): T => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

/** One 2026-07-28 request through `mw` and `handler`. Resolves with the result as it would go on the wire, or rejects with the JSON-RPC error. */
export async function modernCall(mw: Middleware, handler: Handler, req: ModernRequest, events: OutboundEvent[] = []): Promise<JsonObject> {
  const controller = new AbortController();
  const ctx: CallContext = {
    method: 'tools/call',
    name: req.name,
    toolName: req.name,
    args: wire(req.args ?? {}),
    annotations: {},
    requestId: ++ids,
    sessionId: undefined,
    principal: req.principal,
    era: 'modern',
    protocolVersion: '2026-07-28',
    meta: {},
    progressToken: undefined,
    clientCapabilities: wire(req.capabilities ?? {}),
    channel: false,
    signal: controller.signal,
    startedAt: Date.now(),
    lastProgress: undefined,
    completed: false,
    inputResponses: wire(req.inputResponses) as Record<string, JsonObject> | undefined,
    requestState: wire(req.requestState),
    host: {} as ServerHost,
    raw: undefined,
    state: new Map(),
    abort: (reason) => controller.abort(reason),
    emit: async (event) => {
      events.push(event);
    },
    request: async () => {
      throw new Error('2026-07-28 servers never send requests to the client');
    },
  };
  const result = await als.run(ctx, () => mw.handle!(ctx, () => als.run(ctx, async () => handler(ctx.args, ctx))));
  return wire(result);
}

/** The JSON-RPC error a failed call turns into. */
export async function modernError(p: Promise<unknown>): Promise<{ code: number; message: string; data: unknown }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ProtocolError) return { code: err.code, message: err.message, data: err.data };
    throw err;
  }
  throw new Error('expected a JSON-RPC error');
}

/**
 * A 2026-07-28 client: calls, and while the result is input_required, answers every input request
 * with `answer` and retries with a new request carrying `inputResponses` and the echoed `requestState`.
 */
export async function drive(
  mw: Middleware,
  handler: Handler,
  req: ModernRequest,
  answer: (key: string, request: JsonObject, round: number) => unknown,
  maxRequests = 20,
): Promise<{ result: JsonObject; requests: number; states: string[] }> {
  const states: string[] = [];
  let current: ModernRequest = req;
  for (let n = 1; n <= maxRequests; n++) {
    const result = await modernCall(mw, handler, current);
    if (result.resultType !== 'input_required') return { result, requests: n, states };
    const inputResponses: JsonObject = {};
    for (const [key, request] of Object.entries((result.inputRequests ?? {}) as Record<string, JsonObject>)) inputResponses[key] = answer(key, request, n);
    if (typeof result.requestState === 'string') states.push(result.requestState);
    current = { ...req, inputResponses };
    if (result.requestState !== undefined) current.requestState = result.requestState;
  }
  throw new Error(`no complete result after ${maxRequests} requests`);
}
