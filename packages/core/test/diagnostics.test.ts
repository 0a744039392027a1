import { channel } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { CHANNEL_NAMES, diagnostics, type ProgressMessage } from '../src/index.js';

describe('diagnostics channels', () => {
  it('are the process-wide node:diagnostics_channel channels of their names', () => {
    for (const [key, name] of Object.entries(CHANNEL_NAMES)) {
      expect(diagnostics[key as keyof typeof diagnostics]).toBe(channel(name));
      expect(name.startsWith('tether:')).toBe(true);
    }
  });

  it('deliver a published message to a subscriber, and report hasSubscribers', () => {
    const seen: ProgressMessage[] = [];
    const listener = (m: ProgressMessage) => seen.push(m);
    expect(diagnostics.progress.hasSubscribers).toBe(false);
    diagnostics.progress.subscribe(listener);
    try {
      expect(diagnostics.progress.hasSubscribers).toBe(true);
      diagnostics.progress.publish({ ctx: undefined, kind: 'dropped', progress: 3, source: 'test' });
    } finally {
      diagnostics.progress.unsubscribe(listener);
    }
    expect(seen).toEqual([{ ctx: undefined, kind: 'dropped', progress: 3, source: 'test' }]);
    expect(diagnostics.progress.hasSubscribers).toBe(false);
  });
});
