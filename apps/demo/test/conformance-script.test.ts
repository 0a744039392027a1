/**
 * scripts/conformance.mjs (`npm run conformance`), the parts that need no suite download: its
 * argument checks, and `--url` against a running demo without the conformance fixtures (the
 * script stops before installing anything and says how to start the demo). Real child processes,
 * a real demo on 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoApp, startHttp, type RunningHttp } from '../src/index.js';

const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'conformance.mjs');

function runScript(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

let http: RunningHttp | undefined;
afterEach(async () => {
  await http?.close();
  http = undefined;
});

describe('npm run conformance', () => {
  it('refuses an unknown scenario with the list of those that apply', async () => {
    const { code, out } = await runScript(['--scenario', 'resources-list']);
    expect(code).toBe(2);
    expect(out).toContain('unknown scenario resources-list; the scenarios that apply to the demo are:');
    expect(out).toContain('tools-call-with-progress');
    expect(out).toContain('input-required-result-basic-elicitation');
  });

  it('refuses a --url that is not a URL', async () => {
    const { code, out } = await runScript(['--url', 'localhost:3000']);
    expect(code).toBe(2);
    expect(out).toContain('--url must be an absolute http(s) URL');
  });

  it('--url to a demo started without --conformance: stops at once, says how to start it, installs nothing', async () => {
    http = await startHttp({ port: 0, createServer: createDemoApp().createServer });
    const { code, out } = await runScript(['--url', http.url.href]);
    expect(code).toBe(1);
    expect(out).toContain(`${http.url.href} does not expose the conformance fixtures (no test_simple_text among its `);
    expect(out).toContain('npm run dev -- --conformance');
    expect(out).not.toContain('installing');
    expect(out.trim().split('\n').at(-1)).toBe('conformance: 0 passed, 1 failed');
    expect(out).not.toContain(`${String.fromCharCode(27)}[`); // NO_COLOR
  });
});
