/**
 * Resource subscriptions: `resources/subscribe` on 2025-era connections whose server declares
 * `resources.subscribe`; a `subscriptions/listen` stream (SDK 2.x `client.listen`) whose
 * `resourceSubscriptions` names the URI on 2026-07-28. Listeners run on each
 * `notifications/resources/updated` for their URI.
 */
import type { Install } from './handlers.js';
import type { CallToolOptions, SdkClient } from './types.js';

type Request = (method: string, params: Record<string, unknown>, options: CallToolOptions) => Promise<unknown>;
type Unsubscribe = () => Promise<void>;

interface ListenCapable {
  listen?: (
    filter: object,
  ) => Promise<{ honoredFilter?: { resourceSubscriptions?: string[] }; close(): Promise<void> }>;
}

/**
 * Installs the `notifications/resources/updated` handler and returns `subscribe(uri, listener)`:
 * resolves with the unsubscribe function, or `undefined` when the connection cannot subscribe.
 */
export function resourceSubscriptions(client: SdkClient, install: Install, request: Request, modern: () => boolean) {
  const listeners = new Map<string, Set<(uri: string) => void>>();
  install('notifications/resources/updated', (pass) => (notification, ...rest) => {
    const uri = (notification?.params as { uri?: unknown } | undefined)?.uri;
    if (typeof uri === 'string') for (const listener of listeners.get(uri) ?? []) listener(uri);
    return pass(notification, ...rest);
  });
  const add = (uri: string, listener: (uri: string) => void) => {
    const set = listeners.get(uri) ?? new Set();
    listeners.set(uri, set);
    set.add(listener);
    /** Removes the listener; true when it was the URI's last. */
    return () => {
      set.delete(listener);
      if (set.size) return false;
      listeners.delete(uri);
      return true;
    };
  };

  /** 2026-07-28: a listen stream; `undefined` when the server does not honour the filter. */
  const listenTo = async (uri: string, listener: (uri: string) => void): Promise<Unsubscribe | undefined> => {
    const listen = (client as ListenCapable).listen;
    if (typeof listen !== 'function') return undefined;
    const sub = await listen.call(client, { resourceSubscriptions: [uri] });
    if (!sub.honoredFilter?.resourceSubscriptions?.includes(uri)) {
      await sub.close().catch(() => undefined);
      return undefined;
    }
    const remove = add(uri, listener);
    return async () => {
      remove();
      await sub.close();
    };
  };

  return async function subscribe(uri: string, listener: (uri: string) => void): Promise<Unsubscribe | undefined> {
    if (modern()) return listenTo(uri, listener);
    if (!client.getServerCapabilities?.()?.resources?.subscribe) return undefined;
    const remove = add(uri, listener);
    try {
      await request('resources/subscribe', { uri }, { timeoutMs: 30_000 });
    } catch (error) {
      remove();
      throw error;
    }
    return async () => {
      if (remove()) await request('resources/unsubscribe', { uri }, { timeoutMs: 30_000 });
    };
  };
}
