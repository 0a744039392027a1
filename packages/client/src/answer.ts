/**
 * Answering a job's or a task's questions (`inputRequests`: embedded `elicitation/create`, ...)
 * with the handlers the user registered on the SDK client (`setRequestHandler`, or `connect`'s
 * `onElicit`), the way SDK 2.x fulfils a 2026-07-28 `input_required` round itself: each request is
 * handed to the stored handler as a request with the key as its id, with the follow's signal.
 */
import type { InputRequest } from './jobs.js';
import type { SdkClient } from './types.js';

type StoredHandler = (request: Record<string, unknown>, extra: unknown) => Promise<unknown>;

function storedHandler(client: SdkClient, method: string): StoredHandler | undefined {
  const map = (client as unknown as { _requestHandlers?: unknown })._requestHandlers;
  const h = map instanceof Map ? map.get(method) : undefined;
  return typeof h === 'function' ? (h as StoredHandler) : undefined;
}

const unavailable = (what: string) => () => {
  throw new Error(`${what} is not available while answering a job's question locally`);
};

/** The handler context of each SDK line, for a request answered locally (no peer request to relate to). */
function extraFor(
  client: SdkClient,
  sdk: 'v1' | 'v2',
  key: string,
  method: string,
  params: unknown,
  signal: AbortSignal,
) {
  if (sdk === 'v1')
    return {
      signal,
      requestId: key,
      sendNotification: unavailable('sendNotification'),
      sendRequest: unavailable('sendRequest'),
    };
  const base = {
    mcpReq: {
      id: key,
      method,
      _meta: (params as { _meta?: unknown } | undefined)?._meta,
      requestState: () => undefined,
      signal,
      send: unavailable('ctx.mcpReq.send'),
      notify: unavailable('ctx.mcpReq.notify'),
    },
  };
  const build = (client as unknown as { buildContext?: (ctx: object, extra: unknown) => unknown }).buildContext;
  return typeof build === 'function' ? build.call(client, base, undefined) : base;
}

/**
 * The answers to `requests` from the client's own handlers, by key; `undefined` (nothing asked)
 * when a request's method has no handler on this client.
 * @throws what a handler throws
 */
export async function answerWithHandlers(
  client: SdkClient,
  sdk: 'v1' | 'v2',
  requests: Record<string, InputRequest>,
  signal: AbortSignal,
): Promise<Record<string, unknown> | undefined> {
  const entries = Object.entries(requests);
  const handlers = entries.map(([, r]) => storedHandler(client, r.method));
  if (!entries.length || handlers.some((h) => h === undefined)) return undefined;
  const answers: Record<string, unknown> = {};
  for (const [i, [key, r]] of entries.entries()) {
    signal.throwIfAborted();
    const request = { jsonrpc: '2.0', id: key, method: r.method, params: r.params ?? {} };
    answers[key] = await handlers[i]!(request, extraFor(client, sdk, key, r.method, r.params, signal));
  }
  return answers;
}
