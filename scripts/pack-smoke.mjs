#!/usr/bin/env node
// The one smoke runner of scripts/pack-check.mjs, copied into an empty consumer project that has
// the packed tarballs and ONE SDK line (plus zod) installed:
//
//   node pack-smoke.mjs <scenario.mjs> <v1|v2>
//
// A package's `pack-smoke.mjs` is a scenario: `export default async function (sdk) { ... }`,
// written once for both SDK lines against the small `sdk` object below (real McpServers, real
// Clients, real transports of the installed line), throwing on anything unexpected. This runner
// prints `ok` and exits 0 when it resolves, else prints the error and exits 1.
//
// sdk.line        'v1' (@modelcontextprotocol/sdk) or 'v2' (@modelcontextprotocol/server + client)
// sdk.eras        the protocol eras the line serves: v1 ['legacy']; v2 ['legacy', 'modern']
// sdk.createServer()            a new McpServer of that line
// sdk.schema(shape)             an inputSchema from a zod shape (v1: the shape; v2: z.object(shape))
// sdk.connect(makeServer, era, { capabilities?, onElicit?(params), onLog?(params) }) → client:
//   legacy: one server from makeServer() and a Client in memory (a 2025-era session);
//   modern: createMcpHandler(makeServer) and a Client pinned to 2026-07-28 over in-process HTTP
//   (a fresh server per request).
// client.call(name, args?, { onprogress?, timeout?, resetTimeoutOnProgress?, signal?, meta? })
//   → the tools/call result; client.request(method, params, options); client.serverCapabilities();
//   client.close() (closes the server or the handler too).
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [scenarioFile, line] = process.argv.slice(2);
const SERVER_INFO = { name: 'smoke', version: '1.0.0' };
const CLIENT_INFO = { name: 'smoke-client', version: '1.0.0' };

function clientApi(client, request, close) {
  return {
    raw: client,
    request,
    call: (name, args = {}, { meta, ...options } = {}) =>
      request('tools/call', { name, arguments: args, ...(meta && { _meta: meta }) }, options),
    serverCapabilities: () => client.getServerCapabilities(),
    close,
  };
}

async function v1() {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
  const types = await import('@modelcontextprotocol/sdk/types.js');
  return {
    line: 'v1',
    eras: ['legacy'],
    createServer: () => new McpServer(SERVER_INFO),
    schema: (shape) => shape,
    async connect(makeServer, era, { capabilities, onElicit, onLog } = {}) {
      if (era !== 'legacy') throw new Error(`SDK v1 serves the 2025 era only, not ${era}`);
      const server = makeServer();
      const [ct, st] = InMemoryTransport.createLinkedPair();
      await server.connect(st);
      const client = new Client(CLIENT_INFO, capabilities ? { capabilities } : undefined);
      if (onElicit) client.setRequestHandler(types.ElicitRequestSchema, (req) => onElicit(req.params));
      if (onLog) client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => void onLog(n.params));
      await client.connect(ct);
      const request = (method, params, options) =>
        client.request(
          { method, params },
          method === 'tools/call' ? types.CallToolResultSchema : types.ResultSchema,
          options,
        );
      return clientApi(client, request, async () => {
        await client.close();
        await server.close();
      });
    },
  };
}

async function v2() {
  const { McpServer, createMcpHandler } = await import('@modelcontextprotocol/server');
  const { Client, InMemoryTransport, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const { z } = await import('zod');
  return {
    line: 'v2',
    eras: ['legacy', 'modern'],
    createServer: () => new McpServer(SERVER_INFO),
    schema: (shape) => z.object(shape),
    async connect(makeServer, era, { capabilities, onElicit, onLog } = {}) {
      const options = {
        ...(capabilities && { capabilities }),
        ...(era === 'modern' && { versionNegotiation: { mode: { pin: '2026-07-28' } } }),
      };
      const client = new Client(CLIENT_INFO, options);
      if (onElicit) client.setRequestHandler('elicitation/create', (req) => onElicit(req.params));
      if (onLog) client.setNotificationHandler('notifications/message', (n) => void onLog(n.params));
      let close;
      if (era === 'legacy') {
        const server = makeServer();
        const [ct, st] = InMemoryTransport.createLinkedPair();
        await server.connect(st);
        await client.connect(ct);
        close = () => server.close();
      } else {
        const handler = createMcpHandler(() => makeServer());
        await client.connect(
          new StreamableHTTPClientTransport(new URL('http://smoke.test/mcp'), {
            fetch: (u, i) => handler.fetch(new Request(u, i)),
          }),
        );
        close = () => handler.close();
      }
      const request = (method, params, opts) => client.request({ method, params }, opts);
      return clientApi(client, request, async () => {
        await client.close();
        await close();
      });
    },
  };
}

try {
  if (line !== 'v1' && line !== 'v2')
    throw new Error(`usage: node pack-smoke.mjs <scenario.mjs> <v1|v2> (got ${line})`);
  const sdk = line === 'v1' ? await v1() : await v2();
  const scenario = (await import(pathToFileURL(resolve(scenarioFile)).href)).default;
  if (typeof scenario !== 'function') throw new Error(`${scenarioFile} has no default export function`);
  await scenario(sdk);
  console.log('ok');
  process.exit(0);
} catch (err) {
  console.error(err);
  process.exit(1);
}
