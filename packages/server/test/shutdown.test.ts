/**
 * SIGTERM to a real process serving the one-page server (`test/fixtures/serve.ts` under tsx): a
 * call running at the signal gets its result, a new call gets 503 SHUTTING_DOWN, the process exits 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { raw26, textOf, until, v1Client } from './helpers.js';

const serve = fileURLToPath(new URL('./fixtures/serve.ts', import.meta.url));

describe('SIGTERM', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
  });

  it('lets a running call finish, refuses new ones, exits 0', async () => {
    let output = '';
    child = spawn(process.execPath, ['--import', 'tsx', serve], {
      env: { ...process.env, PORT: '0', SECOND_MS: '400' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | string>((resolve) =>
      child!.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
    );
    await until(() => /listening on (http\S+)/.test(output), 60_000, `the listening line (${output})`);
    const url = new URL(/listening on (http\S+)/.exec(output)![1]!);

    const { client } = await v1Client(url);
    const progress: number[] = [];
    const running = client.callTool({ name: 'reindex', arguments: { seconds: 3 } }, undefined, {
      onprogress: (p) => void progress.push(p.progress),
    });
    await until(() => progress.length > 0, 20_000, 'the first progress notification');
    child.kill('SIGTERM');
    await until(() => output.includes('SIGTERM'), 20_000, 'the shutdown line');

    const refused = await raw26(url, 'tools/call', { name: 'counter.increment', arguments: {} });
    expect(refused.status).toBe(503);
    expect(refused.response?.error?.data?.code).toBe('SHUTTING_DOWN');

    expect(textOf(await running)).toBe('Reindexed for 3 seconds.');
    expect(await exited).toBe(0);
    await client.close().catch(() => {});
  }, 90_000);
});
