/** The mutex (@mcp-tether/mutex) and cancel (@mcp-tether/cancel) as assembled in the demo. */
import { refusalCode } from '@mcp-tether/core';
import { connect, type TestClient } from '@mcp-tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoApp } from '../src/index.js';
import { sleep, textOf } from './helpers.js';

const kits: TestClient[] = [];
const open = async (...args: Parameters<typeof connect>) => {
  const kit = await connect(...args);
  kits.push(kit);
  return kit;
};
afterEach(async () => {
  for (const k of kits.splice(0)) await k.close();
});

describe('records.increment under the mutex', () => {
  it('called 20 times in parallel on one key ends at 20', async () => {
    const app = createDemoApp();
    const kit = await open(app.createServer());
    const results = await Promise.all(
      Array.from({ length: 20 }, () => kit.callTool('records.increment', { key: 'k', delayMs: 10 })),
    );
    expect(results.map((r) => Number(textOf(r))).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    expect(textOf(await kit.callTool('records.get', { key: 'k' }))).toBe('20');
    expect(app.stack.writes.stats().keys['records.increment:k']).toMatchObject({ acquired: 20, running: 0, queued: 0 });
  });

  it('serializes across sessions of one process, per key', async () => {
    const app = createDemoApp();
    const a = await open(app.createServer(), { sessionId: 'a' });
    const b = await open(app.createServer(), { sessionId: 'b' });
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => [
        (i % 2 ? a : b).callTool('records.increment', { key: 'x', delayMs: 5 }),
        (i % 2 ? b : a).callTool('records.increment', { key: 'y', delayMs: 5 }),
      ]).flat(),
    );
    expect(textOf(await a.callTool('records.get', { key: 'x' }))).toBe('10');
    expect(textOf(await b.callTool('records.get', { key: 'y' }))).toBe('10');
  });

  it('does not make reads wait for a write', async () => {
    const kit = await open(createDemoApp().createServer());
    let writeDone = false;
    const write = kit.callTool('records.increment', { key: 'slow', delayMs: 1_500 }).then((r) => {
      writeDone = true;
      return r;
    });
    await sleep(50);
    expect(textOf(await kit.callTool('records.get', { key: 'slow' }))).toBe('0');
    expect(writeDone).toBe(false);
    expect(textOf(await write)).toBe('1');
  });

  it('a waiter cancelled in the queue leaves it: no response, no increment', async () => {
    const app = createDemoApp();
    const kit = await open(app.createServer());
    const holder = kit.callTool('records.increment', { key: 'q', delayMs: 400 });
    await sleep(50);
    const waiter = kit.start('records.increment', { key: 'q', delayMs: 0 }, { id: 'waiter' });
    await sleep(50);
    expect(app.stack.writes.stats().keys['records.increment:q']?.queued).toBe(1);
    await waiter.cancel('changed my mind');
    expect(textOf(await holder)).toBe('1');
    await kit.ping();
    expect(kit.wire.responseTo('waiter')).toBeUndefined();
    expect(textOf(await kit.callTool('records.get', { key: 'q' }))).toBe('1');
    expect(app.stack.writes.stats().keys['records.increment:q']).toMatchObject({ abandoned: 1, queued: 0 });
  });

  it('does not hold the lock while billing.refund waits for the user', async () => {
    let release!: () => void;
    const answered = new Promise<void>((r) => (release = r));
    const kit = await open(createDemoApp().createServer(), {
      elicit: async () => {
        await answered;
        return { action: 'decline' };
      },
    });
    // Same invoice, same lock key: if the lock were held across the question, the second call
    // could not ask before the first was answered.
    const first = kit.callTool('billing.refund', { invoiceId: 'INV-9' });
    const second = kit.callTool('billing.refund', { invoiceId: 'INV-9' });
    for (let t = 0; kit.elicitations.length < 2 && t < 100; t++) await sleep(50);
    expect(kit.elicitations).toHaveLength(2);
    release();
    expect((await Promise.all([first, second])).map(textOf)).toEqual([
      expect.stringContaining('not refunded'),
      expect.stringContaining('not refunded'),
    ]);
  });
});

describe('cancel', () => {
  it('a deadline ends a call with a TIMEOUT refusal', async () => {
    const kit = await open(createDemoApp({ deadlineMs: 200 }).createServer());
    const r = await kit.callTool('job.quiet', { ms: 5_000 });
    expect(r.isError).toBe(true);
    expect(refusalCode(r)).toBe('TIMEOUT');
  });

  it('drain() aborts running calls (no response) and refuses new ones with SHUTTING_DOWN', async () => {
    const app = createDemoApp();
    const kit = await open(app.createServer());
    const running = kit.start('job.quiet', { ms: 60_000 }, { id: 'running' });
    await sleep(50);
    expect(app.stack.cancellation.inFlight).toBe(1);
    const drained = await app.stack.drain(2_000);
    expect(drained).toEqual({ aborted: 1, pending: 0 });
    await expect(running.response(300)).rejects.toThrow();
    expect(refusalCode(await kit.callTool('records.get', { key: 'k' }))).toBe('SHUTTING_DOWN');
  });
});
