/**
 * Handler-map takeover: the wrapper's notification handlers are set in the SDK client's own
 * notification-handler map (`_notificationHandlers`, the same private `Map` on both lines, which
 * takes the raw notification and needs no SDK schema), in front of whatever was there; and the
 * client's `elicitation/create` request handler (`_requestHandlers`) is wrapped to report when a
 * person is answering.
 */
import type { SdkClient } from './types.js';

export type NotificationHandler = (notification: any, ...rest: unknown[]) => unknown;

/** Hands a notification on to the handler behind ours (the one that was there, or one set later). */
export type Passer = (notification: any, ...rest: unknown[]) => unknown;

/** Puts our handler for `method` in front: `make(pass)` gets the function that calls the handler behind it. */
export type Install = (method: string, make: (pass: Passer) => NotificationHandler) => void;

/** The client's notification-handler map (present: `tetherClient` checks its seams through core's table). */
export function notificationMapOf(client: SdkClient): Map<string, NotificationHandler> {
  return (client as unknown as { _notificationHandlers: Map<string, NotificationHandler> })._notificationHandlers;
}

/**
 * Take over `map`: our handlers stay in front. A handler set later for the same method (the
 * user's `setNotificationHandler`) becomes the one ours hands over to instead of replacing ours; a
 * removal (`removeNotificationHandler`) removes that one.
 * @returns the function that installs one of ours
 */
export function takeOverNotifications(map: Map<string, NotificationHandler>): Install {
  const inner = new Map<string, NotificationHandler | undefined>();
  const ours = new Map<string, NotificationHandler>();
  const mapSet = map.set.bind(map);
  map.set = (key: string, value: NotificationHandler) => {
    if (ours.has(key) && value !== ours.get(key)) {
      inner.set(key, value);
      return map;
    }
    return mapSet(key, value);
  };
  const mapDelete = map.delete.bind(map);
  map.delete = (key: string) => (ours.has(key) ? inner.delete(key) : mapDelete(key));
  return (method, make) => {
    inner.set(method, map.get(method));
    const handler = make((n, ...rest) => inner.get(method)?.(n, ...rest));
    ours.set(method, handler);
    mapSet(method, handler);
  };
}

const WRAPPED = Symbol('mcp-tether.client.asking');

/**
 * Wrap the client's `elicitation/create` request handler (the one there now and any set later) so
 * that `onAsking(+1)` runs when it starts and `onAsking(-1)` when it ends. (`_requestHandlers` is
 * there: `tetherClient` checks its seams through core's table.)
 */
export function watchAsking(client: SdkClient, onAsking: (delta: 1 | -1) => void): void {
  const requestHandlers = (client as unknown as { _requestHandlers: Map<string, unknown> })._requestHandlers;
  const wrap = (h: any) =>
    typeof h !== 'function' || h[WRAPPED]
      ? h
      : Object.assign(
          async (...a: unknown[]) => {
            onAsking(1);
            try {
              return await h(...a);
            } finally {
              onAsking(-1);
            }
          },
          { [WRAPPED]: true },
        );
  const rh = requestHandlers;
  if (rh.has('elicitation/create')) rh.set('elicitation/create', wrap(rh.get('elicitation/create')));
  const set = rh.set.bind(rh);
  rh.set = (key: string, value: unknown) => set(key, key === 'elicitation/create' ? wrap(value) : value);
}
