/**
 * CPU profiles of a measured section only (not process start-up or module loading), through the
 * inspector's sampling profiler, and a summary of self time by package and by function.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  /** Self time by package (`@mcp-tether/core`, `zod`, `node:internal`, `(garbage collector)`...), percent. */
  byPackage: Array<{ name: string; percent: number }>;
  /** Self time by function, percent. */
  byFunction: Array<{ name: string; percent: number }>;
}

/** Run `fn` under the sampling profiler; write the `.cpuprofile` to `file` and return a summary. */
export async function profile<T>(file: string, fn: () => Promise<T>): Promise<{ value: T; summary: ProfileSummary }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  let value: T;
  let p: CpuProfile;
  try {
    value = await fn();
  } finally {
    ({ profile: p } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile });
    session.disconnect();
  }
  writeFileSync(file, JSON.stringify(p));
  return { value, summary: summarize(p) };
}

/** Which package a script URL belongs to. */
export function packageOf(url: string, fnName: string): string {
  if (!url) return `(${fnName || 'native'})`;
  const u = url.replace(/^file:\/\//, '');
  const nm = u.match(/.*node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (nm) return nm[1]!;
  const ours = u.match(/\/packages\/([^/]+)\//);
  if (ours) return `@mcp-tether/${ours[1]}`;
  if (u.startsWith('node:')) return u.startsWith('node:internal') ? 'node:internal' : u;
  if (u.includes('/bench/')) return 'bench harness';
  return u;
}

export function summarize(p: CpuProfile, top = 25): ProfileSummary {
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dt);
    total += dt;
  }
  const byPkg = new Map<string, number>();
  const byFn = new Map<string, number>();
  for (const [id, t] of self) {
    const cf = nodes.get(id)!.callFrame;
    const pkg = packageOf(cf.url, cf.functionName);
    const file = cf.url.split('/').slice(-1)[0] ?? '';
    const fn = cf.url ? `${cf.functionName || '(anonymous)'} [${pkg} ${file}:${cf.lineNumber + 1}]` : pkg;
    byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + t);
    byFn.set(fn, (byFn.get(fn) ?? 0) + t);
  }
  const rank = (m: Map<string, number>, k: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([name, t]) => ({ name, percent: Math.round((1000 * t) / total) / 10 }));
  return { totalMs: Math.round(total / 1000), byPackage: rank(byPkg, 15), byFunction: rank(byFn, top) };
}

interface SamplingNode {
  selfSize: number;
  callFrame: CallFrame;
  children: SamplingNode[];
}

/** Bytes allocated by `fn` (every object, collected or not), by package: the inspector's sampling heap profiler. */
export interface AllocationSummary {
  /** All bytes sampled while `fn` ran. */
  bytes: number;
  /** By package (`@modelcontextprotocol/sdk`, `zod`, `@mcp-tether/core`, `node:internal`, `(native)`...). */
  byPackage: Array<{ name: string; bytes: number }>;
}

/**
 * Sample what `fn` allocates (every `samplingInterval` bytes on average; objects collected by
 * minor and major GCs included). Unlike timings, this does not depend on the machine's load.
 */
export async function allocations(fn: () => Promise<void>, samplingInterval = 256): Promise<AllocationSummary> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
  let p: { head: SamplingNode };
  try {
    await fn();
  } finally {
    ({ profile: p } = (await session.post('HeapProfiler.stopSampling')) as unknown as {
      profile: { head: SamplingNode };
    });
    session.disconnect();
  }
  const byPkg = new Map<string, number>();
  let bytes = 0;
  const walk = (n: SamplingNode) => {
    bytes += n.selfSize;
    const pkg = packageOf(n.callFrame.url, n.callFrame.functionName);
    byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c);
  };
  walk(p.head);
  const byPackage = [...byPkg]
    .filter(([, b]) => b > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, b]) => ({ name, bytes: b }));
  return { bytes, byPackage };
}
