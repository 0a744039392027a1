/**
 * The stacks of the instruction count (`--instructions`, see instructions/README.md), by name: the
 * same servers as (1) and its breakdown, each built from scratch in its own process.
 */
import { cancel } from '@mcp-tether/cancel';
import type { Middleware } from '@mcp-tether/core';
import { heartbeat } from '@mcp-tether/heartbeat';
import { logChannel } from '@mcp-tether/log-channel';
import { mrtr } from '@mcp-tether/mrtr';
import { mutex } from '@mcp-tether/mutex';
import { otel } from '@mcp-tether/otel';
import { progressMiddleware } from '@mcp-tether/progress';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { registerRecordingSdk } from './otelSdk.js';
import { echoServer, echoServerWithAls, fullStack } from './servers.js';

const alone = (m: () => Middleware) => () => echoServer([m()]);

/** Name → how to build the server; the order is the report's. */
export const INSTRUCTION_STACKS: Readonly<Record<string, { label: string; make: () => McpServer }>> = {
  bare: { label: 'bare SDK `McpServer`', make: () => echoServer() },
  'bare-logging': {
    label: 'reference: bare + the `logging` capability (what log-channel declares), no tether',
    make: () => {
      const server = echoServer();
      server.server.registerCapabilities({ logging: {} });
      return server;
    },
  },
  'bare-als': { label: 'reference: bare + one `AsyncLocalStorage.run` per call', make: () => echoServerWithAls() },
  core: { label: '`tether(server, [])` (core alone)', make: () => echoServer([]) },
  'core-als': {
    label: '`tether(server, [], { asyncContext: true })`',
    make: () => echoServer([], { asyncContext: true }),
  },
  cancel: { label: 'cancel() alone', make: alone(() => cancel()) },
  heartbeat: { label: 'heartbeat() alone', make: alone(() => heartbeat()) },
  progress: { label: 'progressMiddleware() alone', make: alone(() => progressMiddleware()) },
  'log-channel': { label: 'logChannel() alone', make: alone(() => logChannel()) },
  mrtr: { label: 'mrtr() alone (asks for async context)', make: alone(() => mrtr()) },
  mutex: { label: 'mutex() alone', make: alone(() => mutex()) },
  full: { label: 'all six (`tether()` defaults: mrtr asks for async context)', make: () => echoServer(fullStack()) },
  'full-noctx': {
    label: 'all six, `{ asyncContext: false }`',
    make: () => echoServer(fullStack(), { asyncContext: false }),
  },
  otel: { label: 'otel() alone, no OpenTelemetry SDK registered (the API no-op)', make: alone(() => otel()) },
  'full-noctx-otel': {
    label: 'otel() + all six, `{ asyncContext: false }`, no SDK registered',
    make: () => echoServer([otel(), ...fullStack()], { asyncContext: false }),
  },
  'otel-sdk': {
    label: 'otel() alone with a recording SDK (spans made and exported to a sink, metrics aggregated)',
    make: () => {
      registerRecordingSdk();
      return echoServer([otel()]);
    },
  },
};
