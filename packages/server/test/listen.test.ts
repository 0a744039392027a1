/** listen()'s refusals that a newcomer meets first: a PORT that is not a port, a port in use. */
import { createServer } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { createApp } from '../src/index.js';

const saved = process.env.PORT;
afterEach(() => {
  if (saved === undefined) delete process.env.PORT;
  else process.env.PORT = saved;
});

it('a PORT that is not a port number is refused with a TypeError that names it', async () => {
  process.env.PORT = 'abc';
  const app = createApp({ name: 'port', handleSignals: false });
  app.tool('x', {}, async () => 'ok');
  await expect(app.listen()).rejects.toThrow(/PORT from the environment is not a port number \(0 to 65535\): abc/);
});

it('a port in use is refused with an error that says so and what to do, the cause kept', async () => {
  const blocker = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => blocker.once('listening', resolve));
  try {
    const port = (blocker.address() as { port: number }).port;
    const app = createApp({ name: 'busy', handleSignals: false });
    app.tool('x', {}, async () => 'ok');
    const err = (await app.listen(port).catch((e: unknown) => e)) as Error & { cause?: { code?: string } };
    expect(err.message).toMatch(new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use \\(EADDRINUSE\\)`));
    expect(err.cause?.code).toBe('EADDRINUSE');
  } finally {
    blocker.close();
  }
});
