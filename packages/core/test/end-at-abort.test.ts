/**
 * Core ends a call at its abort (no middleware of its own needed), sees every result once through
 * the middlewares' onResult hooks, and counts the calls of a server in flight (ServerHost.inFlight,
 * idle, abortAll) — on every SDK line and era, on the wire.
 */
import { describeEachSdk, type MatrixClient, tetheredServer } from '@mcp-tether/testing/matrix';
import { until } from '@mcp-tether/testing';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type CallContext,
  type CallResult,
  DeadlineExceeded,
  type Middleware,
  type ServerHost,
  ShuttingDown,
} from '../src/index.js';

let kit: MatrixClient | undefined;
afterEach(async () => {
  await kit?.close().catch(() => {});
  kit = undefined;
});

const text = (r: unknown) => (r as { content?: Array<{ text?: string }> }).content?.[0]?.text;

describeEachSdk('the call ends at its abort', (sdk) => {
  it('a deadline abort is answered at once with the TIMEOUT refusal while the handler still runs; nothing it produces later is sent', async () => {
    let release: (() => void) | undefined;
    let handlerDone = false;
    // A middleware of the test's own (not cancel): it only aborts the call with a deadline.
    const deadline: Middleware = {
      name: 'deadline',
      handle: (ctx, next) => {
        setTimeout(() => ctx.abort(new DeadlineExceeded(50)), 50);
        return next();
      },
    };
    kit = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [deadline]);
      server.registerTool('stuck', {}, async () => {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        handlerDone = true;
        return { content: [{ type: 'text', text: 'late' }] };
      });
      return server;
    });
    const call = kit.start('stuck', {}, { id: 'd1' });
    const response = (await call.response(10_000)) as { result?: CallResult };
    expect(handlerDone).toBe(false);
    expect(response.result?.isError).toBe(true);
    expect(response.result?.structuredContent).toMatchObject({ code: 'TIMEOUT', timeoutMs: 50 });
    release?.();
    await until(() => handlerDone, 10_000, 'the handler to return');
    await new Promise((r) => setTimeout(r, 50));
    expect(kit.wire.messages.filter((m) => m.message.id === 'd1' && m.direction === 'server->client')).toHaveLength(1);
  });

  it('onResult hooks see each result once, innermost first; again() runs the inner chain and the handler once more', async () => {
    const seen: string[] = [];
    let runs = 0;
    let outerRuns = 0;
    const outer: Middleware = {
      name: 'outer',
      handle: (_ctx, next) => {
        outerRuns++;
        return next();
      },
      onResult: (_ctx, result) => {
        seen.push(`outer:${text(result)}`);
        return { ...result, content: [{ type: 'text', text: `${text(result)}+outer` }] };
      },
    };
    const retry: Middleware = {
      name: 'retry',
      onResult: (ctx, result, again) => {
        seen.push(`retry:${text(result)}`);
        if (text(result) !== 'first') return undefined;
        ctx.state.set(Symbol.for('test.second'), true);
        return again();
      },
    };
    kit = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [outer, retry]);
      server.registerTool('t', { inputSchema: { n: z.number() } }, async () => {
        runs++;
        return { content: [{ type: 'text', text: runs % 2 === 1 ? 'first' : 'second' }] };
      });
      return server;
    });
    const r = await kit.callTool('t', { n: 1 });
    expect(text(r)).toBe('second+outer');
    expect(seen).toEqual(['retry:first', 'outer:second']);
    expect([runs, outerRuns]).toEqual([2, 1]);
  });

  it('ServerHost.inFlight counts a call that ended at an abort until its handler returned; idle() waits for it; abortAll counts only fresh aborts', async () => {
    const hosts: ServerHost[] = [];
    let release: (() => void) | undefined;
    let entered = 0;
    const spy: Middleware = { name: 'spy', setup: (h) => void hosts.push(h) };
    kit = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [spy]);
      server.registerTool('hold', {}, async (ctx: CallContext) => {
        entered++;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return { content: [{ type: 'text', text: String(ctx.requestId) }] };
      });
      return server;
    });
    const call = kit.start('hold', {}, { id: 'h1' });
    await until(() => entered === 1, 10_000, 'the handler to start');
    const host = hosts[hosts.length - 1]!;
    expect(host.inFlight()).toBe(1);
    expect(host.abortAll(new ShuttingDown())).toBe(1);
    expect(host.abortAll(new ShuttingDown())).toBe(0); // aborted already
    await expect(call.response(300)).rejects.toThrow(); // no response after the abort
    expect(host.inFlight()).toBe(1); // the handler still runs
    let idle = false;
    void host.idle().then(() => {
      idle = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(idle).toBe(false);
    release?.();
    await until(() => idle, 10_000, 'idle()');
    expect(host.inFlight()).toBe(0);
  });
});
