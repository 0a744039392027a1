/**
 * Turn any value into plain JSON so a log line can always be sent and written: `Error` becomes
 * `{ name, message }` (no stack: spec security note, logs must not leak internals), `bigint` a
 * string, non-finite numbers a string, a circular reference `'[Circular]'`, anything deeper than
 * {@link MAX_DEPTH} `'[Depth]'`; `toJSON()` is honoured (Dates become ISO strings); a `Map` becomes an object (non-string keys
 * as their JSON text), a `Set` an array; functions,
 * symbols and `undefined` members are left out as `JSON.stringify` does; top-level `undefined` is `null`.
 */
export const MAX_DEPTH = 32;

export function toJson(value: unknown): unknown {
  const out = walk(value, [], 0);
  return out === undefined ? null : out;
}

function walk(v: unknown, ancestors: object[], depth: number): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : String(v); // -0 is 0 in JSON
    case 'bigint':
      return v.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (v === null) return null;
  const o = v as object;
  if (ancestors.includes(o)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Depth]';
  const next = [...ancestors, o];
  if (o instanceof Error) {
    const e: Record<string, unknown> = { name: o.name, message: o.message };
    const code = (o as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') e.code = code;
    return e;
  }
  const toJSON = (o as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') {
    let j: unknown;
    try {
      j = toJSON.call(o);
    } catch {
      return '[Unserializable]';
    }
    return j === o ? '[Unserializable]' : walk(j, next, depth + 1);
  }
  if (Array.isArray(o)) return Array.from(o, (x) => walk(x, next, depth + 1) ?? null);
  if (o instanceof Map) {
    const r: Record<string, unknown> = {};
    for (const [k, x] of o) {
      const w = walk(x, next, depth + 1);
      if (w !== undefined) r[typeof k === 'string' ? k : JSON.stringify(walk(k, next, depth + 1) ?? null)] = w;
    }
    return r;
  }
  if (o instanceof Set) return walk([...o], next, depth + 1);
  const r: Record<string, unknown> = {};
  for (const k of Object.keys(o)) {
    let x: unknown;
    try {
      x = (o as Record<string, unknown>)[k];
    } catch {
      x = '[Unserializable]';
    }
    const w = walk(x, next, depth + 1);
    if (w !== undefined) r[k] = w;
  }
  return r;
}
