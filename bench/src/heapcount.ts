/**
 * Heap snapshot counts: objects and self bytes by constructor name, from `v8.getHeapSnapshot()`,
 * and the difference between two snapshots. For "what does one open call keep alive?".
 */
import { getHeapSnapshot } from 'node:v8';

export interface HeapCounts {
  /** constructor (or node type for non-objects) → [count, self bytes] */
  [name: string]: [number, number];
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

async function readSnapshot(): Promise<Snapshot> {
  const chunks: Buffer[] = [];
  for await (const c of getHeapSnapshot()) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Snapshot;
}

/** Take a heap snapshot (this runs a full GC first) and count its nodes by constructor name. */
export async function heapCounts(): Promise<HeapCounts> {
  const snap = await readSnapshot();
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const iType = fields.indexOf('type');
  const iName = fields.indexOf('name');
  const iSize = fields.indexOf('self_size');
  const out: HeapCounts = {};
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + iType]!]!;
    // Objects by constructor name; everything else (closures, strings, arrays, code...) by type.
    let name = type === 'object' || type === 'native' ? snap.strings[snap.nodes[i + iName]!]! : `(${type})`;
    if (type === 'closure') name = '(closure)';
    const e = out[name] ?? [0, 0];
    out[name] = e;
    e[0]++;
    e[1] += snap.nodes[i + iSize]!;
  }
  return out;
}

/** The constructors that grew most from `a` to `b`, per `per` units (e.g. per open call). */
export function heapDiff(
  a: HeapCounts,
  b: HeapCounts,
  per = 1,
  top = 20,
): Array<{ name: string; count: number; bytes: number }> {
  const rows: Array<{ name: string; count: number; bytes: number }> = [];
  for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const [ca, sa] = a[name] ?? [0, 0];
    const [cb, sb] = b[name] ?? [0, 0];
    if (sb - sa > 0)
      rows.push({
        name,
        count: Math.round(((cb - ca) / per) * 100) / 100,
        bytes: Math.round(((sb - sa) / per) * 10) / 10,
      });
  }
  return rows.sort((x, y) => y.bytes - x.bytes).slice(0, top);
}
