/**
 * What the walkthrough client shows of the wire: a tap on its transport (the tools/call requests it
 * sent, the ids the server answered, each cancel it sends, printed; the negotiated protocol
 * version), and the progress of a call (a live bar on a terminal, sampled lines otherwise).
 */
import type { ProgressReport } from '@mcp-tether/client';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import cliProgress from 'cli-progress';
import { paint, say, tty } from './cli.js';

/** Request ids of tools/call requests we sent, by tool name, and ids the server answered. */
export const sentCalls: Array<{ id: string | number; name: string }> = [];
export const answered = new Set<string | number>();
let version: string | undefined;
/** The protocol version the server answered `initialize` with, once it did. */
export function negotiatedVersion(): string | undefined {
  return version;
}
/** Watches the wire: what was sent and answered, and each cancel we send (printed, so the transcript shows it). */
export function tap(transport: Transport): void {
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, o) => {
    const m = message as {
      id?: string | number;
      method?: string;
      params?: { name?: string; requestId?: unknown; reason?: unknown };
    };
    if (m.method === 'tools/call' && m.id !== undefined) sentCalls.push({ id: m.id, name: String(m.params?.name) });
    if (m.method === 'notifications/cancelled') {
      const name = sentCalls.find((c) => c.id === m.params?.requestId)?.name;
      say(
        paint(
          'gray',
          `    → notifications/cancelled sent for request ${String(m.params?.requestId)}${name ? ` (${name})` : ''}: ${String(m.params?.reason)}`,
        ),
      );
    }
    return send(message, o);
  };
  // Protocol.connect chains an onmessage that is already set, so this runs first, in arrival order.
  transport.onmessage = (message: JSONRPCMessage) => {
    const m = message as { id?: string | number; method?: string; result?: { protocolVersion?: unknown } };
    if (m.id !== undefined && m.method === undefined) answered.add(m.id);
    if (typeof m.result?.protocolVersion === 'string') version = m.result.protocolVersion;
  };
}

// ---------------------------------------------------------------- progress display

/** A live bar on a terminal; sampled lines otherwise (so CI logs stay short). */
export class ProgressView {
  readonly updates: ProgressReport[] = [];
  private bar: cliProgress.SingleBar | undefined;
  private lastLineBucket = -1;
  private lastLineMessage: string | undefined;

  constructor(private readonly label: string) {
    if (tty) {
      this.bar = new cliProgress.SingleBar(
        { format: `  ${label} {bar} {pct} | {message}`, hideCursor: true, barsize: 30, clearOnComplete: false },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(100, 0, { pct: '  0%', message: 'waiting for progress…' });
    }
  }

  readonly update = (p: ProgressReport): void => {
    this.updates.push(p);
    const pct = p.total ? Math.min(100, (p.progress / p.total) * 100) : undefined;
    const message = p.message ?? (p.total ? `${p.progress}/${p.total}` : `progress ${p.progress}`);
    if (this.bar) {
      this.bar.update(pct ?? 0, { pct: pct === undefined ? '  ?%' : `${pct.toFixed(0).padStart(3)}%`, message });
      return;
    }
    const bucket = pct === undefined ? -1 : Math.floor(pct / 10);
    if (bucket !== this.lastLineBucket || (p.message !== undefined && p.message !== this.lastLineMessage)) {
      say(`    ${this.label} ${pct === undefined ? '' : `${pct.toFixed(0).padStart(3)}% `}${message}`);
      this.lastLineBucket = bucket;
      this.lastLineMessage = p.message;
    }
  };

  stop(): void {
    this.bar?.stop();
  }

  get strictlyIncreasing(): boolean {
    return this.updates.every((u, i) => i === 0 || u.progress > this.updates[i - 1]!.progress);
  }
}
