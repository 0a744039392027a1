/**
 * W3C trace context in `params._meta` (SEP-414): `traceparent`, `tracestate` and `baggage` travel
 * as unprefixed keys. Extraction and injection go through the globally configured propagators
 * (`propagation` of `@opentelemetry/api`), as the conventions ask.
 */
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';

/** The `_meta` keys SEP-414 reserves for trace context. */
export const TRACE_KEYS = ['traceparent', 'tracestate', 'baggage'] as const;

const getter: TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const v = carrier[key];
    return typeof v === 'string' ? v : Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
  },
};

const setter: TextMapSetter<Record<string, unknown>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/** Whether `meta` carries any trace context key (cheap: no propagator runs otherwise). */
export function hasTraceContext(meta: Record<string, unknown> | undefined): boolean {
  return meta !== undefined && (meta.traceparent !== undefined || meta.baggage !== undefined);
}

/** The context `meta` carries (on top of `base`, default the root: the ambient context is not the parent). */
export function extractFrom(meta: Record<string, unknown> | undefined, base: Context = ROOT_CONTEXT): Context {
  return hasTraceContext(meta) ? propagation.extract(base, meta, getter) : base;
}

/** Write the trace context of `ctx` (default: the active one) into `carrier`, returning it. */
export function injectInto<T extends Record<string, unknown>>(carrier: T, ctx: Context = context.active()): T {
  propagation.inject(ctx, carrier, setter);
  return carrier;
}

/** The trace context of `ctx` as a fresh string map (`{}` when the propagators write nothing). */
export function carrierOf(ctx: Context): Record<string, string> {
  return injectInto<Record<string, string>>({}, ctx);
}
