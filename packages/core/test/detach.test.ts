/**
 * detachCall(ctx, work): a middleware answers the request at once while the rest of the chain and
 * the handler go on (what @mcp-tether/jobs does), on every SDK line and era.
 */
import { expect, it } from 'vitest';
import { z } from 'zod';
import {
  detachCall,
  handler,
  isDetached,
  lingeringWork,
  progressEvent,
  type CallContext,
  type Middleware,
  type OutboundEvent,
} from '../src/index.js';
import { pause, until } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer } from '@mcp-tether/testing/matrix';

describeEachSdk('core: detachCall', (sdk) => {
  it('answers at once; the work goes on, its events pass the tap but never reach the wire; outer layers wait for it, inner ones do not', async () => {
    const seen: {
      outerLingering?: boolean;
      innerLingering?: boolean;
      tapped: OutboundEvent[];
      requestError?: string;
      finished?: boolean;
      detached?: boolean;
    } = { tapped: [] };
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let outerDone!: Promise<void>;
    const outer: Middleware = {
      name: 'outer',
      async handle(_ctx, next) {
        const r = await next();
        const l = lingeringWork(_ctx);
        seen.outerLingering = l !== undefined;
        outerDone = l ?? Promise.resolve();
        return r;
      },
    };
    const detacher: Middleware = {
      name: 'detacher',
      handle(ctx, next) {
        void detachCall(ctx, async () => {
          await next();
          seen.finished = true;
        });
        seen.detached = isDetached(ctx);
        return Promise.resolve({ content: [{ type: 'text', text: 'accepted' }] });
      },
      onEvent(ctx, event, next) {
        if (ctx.completed) {
          seen.tapped.push(event);
          return; // after the response: observed, not sent
        }
        return next(event);
      },
    };
    const inner: Middleware = {
      name: 'inner',
      async handle(ctx, next) {
        try {
          return await next();
        } finally {
          seen.innerLingering = lingeringWork(ctx) !== undefined;
        }
      },
    };
    const errors: unknown[] = [];
    const kit = await sdk.connect(() => {
      const { server } = tetheredServer(sdk, [outer, detacher, inner], errors);
      server.registerTool(
        'work',
        { inputSchema: { n: z.number() } },
        handler(async function* (_args: { n: number }, ctx: CallContext) {
          await gate;
          yield progressEvent(1, 2, 'after the response');
          if (sdk.era === 'legacy') {
            await ctx
              .request('elicitation/create', { message: 'late?', requestedSchema: { type: 'object', properties: {} } })
              .catch((e: Error) => {
                seen.requestError = e.message;
              });
          }
          return { content: [{ type: 'text', text: 'done' }] };
        }) as never,
      );
      return server;
    });
    try {
      const r = await kit.callTool('work', { n: 1 }, { progressToken: 'p' });
      expect(r.content[0].text).toBe('accepted');
      expect(seen.detached).toBe(true);
      expect(seen.outerLingering).toBe(true); // the outer layer waits for the work
      let outerSettled = false;
      void outerDone.then(() => (outerSettled = true));
      await pause(50);
      expect(outerSettled).toBe(false);
      release();
      await until(() => seen.finished === true, 3_000, 'the work');
      await until(() => outerSettled, 3_000, 'the outer wait');
      expect(seen.innerLingering).toBe(false); // code inside the work never waits for itself
      expect(seen.tapped.map((e) => e.type)).toContain('progress');
      if (sdk.era === 'legacy') expect(seen.requestError).toMatch(/already answered/);
      await pause(50);
      expect(kit.wire.progress('p')).toEqual([]);
      expect(kit.wire.serverRequests('elicitation/create')).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await kit.close();
    }
  });
});
