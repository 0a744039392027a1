/**
 * A server for the transport rows of (1), started as a child process by scenarios/transport.ts, so
 * that its CPU is measured apart from the client's: `node dist/transport-server.js <transport> <stack>`.
 *
 * - `stdio`: SDK 1.x `McpServer` on `StdioServerTransport`.
 * - `http-2025`: SDK 1.x `McpServer` over Streamable HTTP on 127.0.0.1, stateful (one session, one
 *   server), the core test kit's `serveHttp` (the SDK's own transport on node:http); prints `URL <url>`.
 * - `http-2026`: SDK 2.x `McpServer` per request through `createMcpHandler` (protocol 2026-07-28,
 *   stateless), served by node:http on 127.0.0.1 (a Request/Response bridge); prints `URL <url>`.
 *
 * Stacks: `bare` (no tether), `core` (`tether(server, [])`), `full` (all six, defaults) and
 * `full-noctx` (all six, `{ asyncContext: false }`). Tools: `echo { n }` (the trivial tool of (1)) and
 * `cpu` (this process's `process.cpuUsage()`, µs). The process ends when stdin closes.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tether, type AttachOptions } from '@mcp-tether/core';
import { serveHttp } from '@mcp-tether/testing';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpHandler, McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { echoResult, echoSchema, fullStack, INFO } from './servers.js';

const [transport, stack] = process.argv.slice(2);
const STACKS: Record<string, { middlewares?: () => ReturnType<typeof fullStack>; options?: AttachOptions }> = {
  bare: {},
  core: { middlewares: () => [] },
  full: { middlewares: () => fullStack() },
  'full-noctx': { middlewares: () => fullStack(), options: { asyncContext: false } },
};
const spec = stack === undefined ? undefined : STACKS[stack];
if (!spec || !['stdio', 'http-2025', 'http-2026'].includes(transport ?? '')) {
  console.error(`usage: transport-server.js <stdio|http-2025|http-2026> <${Object.keys(STACKS).join('|')}>`);
  process.exit(2);
}

const cpuResult = () => {
  const c = process.cpuUsage();
  return { content: [{ type: 'text' as const, text: JSON.stringify({ user: c.user, system: c.system }) }] };
};

// One set of middleware instances for the process, shared by every server (on stateless HTTP,
// one server per request), as the middlewares' READMEs ask: a mutex or drain() spans them.
const middlewares = spec.middlewares?.();

/** The same server in every stack; `tether()` before the tools, as a user would write it. */
function make<S extends McpServerV1 | McpServerV2>(server: S): S {
  if (middlewares) tether(server, middlewares, spec!.options);
  const s = server as unknown as McpServerV1;
  s.registerTool('echo', { inputSchema: echoSchema }, async ({ n }) => echoResult(n));
  s.registerTool('cpu', { inputSchema: {} }, async () => cpuResult());
  return server;
}

process.stdin.on('end', () => process.exit(0));
if (transport === 'stdio') {
  await make(new McpServerV1(INFO)).connect(new StdioServerTransport());
} else if (transport === 'http-2025') {
  const http = await serveHttp(() => make(new McpServerV1(INFO)), { stateful: true });
  process.stdout.write(`URL ${http.url.href}\n`);
  process.stdin.resume();
} else {
  const handler = createMcpHandler(() => make(new McpServerV2(INFO)), { onerror: () => {} } as never);
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, {
        method: req.method,
        headers,
        ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
      });
      handler
        .fetch(request)
        .then(async (response) => {
          res.writeHead(response.status, Object.fromEntries(response.headers));
          res.end(Buffer.from(await response.arrayBuffer()));
        })
        .catch((err: unknown) => {
          res.writeHead(500).end(String(err));
        });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`URL http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp\n`);
  process.stdin.resume();
}
