/**
 * typescript-sdk #2580 on a real pipe: 1 000 calls whose final progress report and result leave
 * the server in the same write (a real child process, SDK stdio transports on both sides, both
 * SDK lines). The SDK's own `onprogress` loses it; `tetherClient`'s `onProgress` never does.
 *
 * The cause, in both SDK lines' `Protocol`: a notification is dispatched one microtask late
 * (`_onnotification`: `Promise.resolve().then(() => handler(notification))`) while a response is
 * handled at once (`_onresponse` deletes the request's `_progressHandlers` entry). When both
 * messages come out of one chunk, the stdio ReadBuffer hands them over synchronously one after
 * the other, so the response removes the progress handler before the progress handler runs:
 * "Received a progress notification for an unknown token".
 */
import { fileURLToPath } from 'node:url';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { describe, expect, it } from 'vitest';
import { tetherClient } from '../src/index.js';

const fixture = fileURLToPath(new URL('./fixtures/coalesce-server.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));
const CALLS = 1_000;

for (const line of ['v1', 'v2'] as const) {
  describe(`final progress in the same write as the result [SDK ${line}]`, () => {
    it(`is delivered on all ${CALLS} calls through tetherClient (and lost through the bare SDK onprogress)`, async () => {
      const params = {
        command: process.execPath,
        args: ['--import', 'tsx', fixture, line],
        cwd,
        stderr: 'inherit' as const,
      };
      const client =
        line === 'v1' ? new ClientV1({ name: 't', version: '1' }) : new ClientV2({ name: 't', version: '1' });
      const sdkErrors: string[] = [];
      client.onerror = (e: Error) => sdkErrors.push(e.message);
      await (client as ClientV1).connect((line === 'v1' ? new StdioV1(params) : new StdioV2(params)) as never);
      try {
        // Control: the SDK's own onprogress, same server, same chunks.
        let sdkDelivered = 0;
        for (let i = 0; i < CALLS; i++) {
          let last: number | undefined;
          const onprogress = (p: { progress: number }) => {
            last = p.progress;
          };
          if (line === 'v1')
            await (client as ClientV1).callTool({ name: 'final', arguments: { i } }, undefined, { onprogress });
          else await (client as unknown as ClientV2).callTool({ name: 'final', arguments: { i } }, { onprogress });
          if (last === 100) sdkDelivered++;
        }
        const sdkLost = CALLS - sdkDelivered;
        expect(sdkLost, 'the fixture reproduces #2580 (final progress lost by the SDK onprogress)').toBeGreaterThan(0);
        expect(sdkErrors.filter((m) => m.includes('unknown token')).length).toBe(sdkLost);

        const tc = tetherClient(client as never);
        let delivered = 0;
        for (let i = 0; i < CALLS; i++) {
          const seen: string[] = [];
          const r = await tc.callTool(
            'final',
            { i },
            { onProgress: (p) => seen.push(`${p.progress}/${p.total} ${p.message}`) },
          );
          if (seen.length === 1 && seen[0] === `100/100 done ${i}` && r.content?.[0]?.text === String(i)) delivered++;
        }
        expect(delivered).toBe(CALLS);
        expect(sdkErrors.filter((m) => m.includes('unknown token')).length).toBe(sdkLost); // none added by our calls
        console.log(
          `[SDK ${line}] final progress in the response's chunk: SDK onprogress lost ${sdkLost}/${CALLS}; tetherClient lost 0/${CALLS}`,
        );
      } finally {
        await client.close();
      }
    }, 60_000);
  });
}
