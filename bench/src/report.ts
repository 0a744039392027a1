/** The report: its JSON shape and the Markdown tables made from it. */
import { renderAttack } from './report-attack.js';
import {
  renderCancel,
  renderFlood,
  renderHeartbeatSection,
  renderMemory,
  renderMutex,
  renderOverhead,
} from './report-calls.js';
import { renderBullmq, renderScaling, renderTransport } from './report-scaling.js';

export interface Target {
  id: string;
  what: string;
  target: string;
  value: string;
  met: boolean;
}

export interface Report {
  meta: {
    mode: 'full' | 'quick';
    date: string;
    command: string;
    node: string;
    platform: string;
    cpus: string;
    memoryGiB: number;
    loadAverageBefore: number[];
    loadAverageAfter: number[];
    durationSec: number;
    versions: Record<string, string>;
    errors: string[];
  };
  targets: Target[];
  sections: Partial<
    Record<
      | 'overhead'
      | 'flood'
      | 'cancel'
      | 'mutex'
      | 'heartbeat'
      | 'memory'
      | 'scaling'
      | 'transport'
      | 'bullmq'
      | 'attack',
      any
    >
  >;
}

export const fmt = (x: unknown, d = 1): string => {
  if (x === undefined || x === null) return '–';
  if (typeof x !== 'number') return String(x);
  if (!Number.isFinite(x)) return String(x);
  return x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: 0 });
};

export function table(head: string[], rows: unknown[][]): string {
  const line = (cells: unknown[]) => `| ${cells.map((c) => String(c ?? '–')).join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n') + '\n';
}

export function renderMarkdown(r: Report): string {
  const m = r.meta;
  const s = r.sections;
  let out = `# Benchmarks: ${m.mode} run\n\n`;
  out += `- Command: \`${m.command}\` (from the repository root; \`npm run bench\` works too)\n`;
  out += `- Date: ${m.date}; took ${fmt(m.durationSec)} s\n`;
  out += `- Machine: Node ${m.node}, ${m.platform}, ${m.cpus}, ${fmt(m.memoryGiB)} GiB\n`;
  out += `- Load average (1, 5, 15 min) before: ${m.loadAverageBefore.join(', ')}; after: ${m.loadAverageAfter.join(', ')}\n`;
  out += `- Versions: ${Object.entries(m.versions)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}\n`;
  if (m.mode === 'quick')
    out += `\n> Quick mode: sizes are tiny, this run only proves the harness works. Do not read the numbers.\n`;
  if (m.loadAverageBefore[0]! > 1.5)
    out += `\n> The machine was busy (load average ${m.loadAverageBefore[0]}): absolute times are inflated and ratios noisy.\n`;
  if (m.errors.length) out += `\n> **Scenarios that failed:** ${m.errors.join('; ')}\n`;

  if (r.targets.length) {
    out += `\n## Targets\n\n`;
    out += table(
      ['#', 'what', 'target', 'measured', ''],
      r.targets.map((t) => [t.id, t.what, t.target, t.value, t.met ? 'met' : '**missed**']),
    );
  }

  if (s.overhead) out += renderOverhead(s.overhead);
  if (s.flood) out += renderFlood(s.flood);
  if (s.cancel) out += renderCancel(s.cancel);
  if (s.mutex) out += renderMutex(s.mutex);
  if (s.heartbeat) out += renderHeartbeatSection(s.heartbeat);
  if (s.memory) out += renderMemory(s.memory);
  if (s.scaling) out += renderScaling(s.scaling);
  if (s.transport) out += renderTransport(s.transport);
  if (s.bullmq) out += renderBullmq(s.bullmq);
  if (s.attack) out += renderAttack(s.attack);
  return out;
}
