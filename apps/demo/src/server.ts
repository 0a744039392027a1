import { tether } from '@mcp-tether/core';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { createStack, type DemoStack, type StackOptions } from './middlewares.js';
import { RecordStore, type Records } from './state.js';
import { registerConformanceFixtures } from './tools/conformance.js';
import { registerDemoTools } from './tools/demo.js';
import { registerElicitationFixtures, registerInteractiveTools } from './tools/interactive.js';
import { registerInputRequiredFixtures } from './tools/inputRequired.js';
import { registerJobTools } from './tools/jobs.js';
import { registerTaskFixtures } from './tools/taskFixtures.js';
import type { DemoServer } from './tools/register.js';

/** Name and version the demo announces in `initialize`. */
export const SERVER_INFO = { name: 'tether-demo', version: '0.1.0' } as const;

/** Everything one process shares between its sessions. */
export interface DemoApp {
  readonly stack: DemoStack;
  readonly records: Records;
  /** A fresh, fully wired SDK v1 `McpServer` (one per 2025-era session on HTTP, one per process on stdio). */
  createServer(): McpServer;
  /**
   * A fresh, fully wired SDK v2 `McpServer` (`@modelcontextprotocol/server`) with the same tools and
   * the SAME middleware instances: the factory of `createMcpHandler`, called once per 2026-07-28
   * HTTP request (nothing survives between two requests but what the stack and `records` hold).
   */
  createModernServer(): McpServerV2;
}

const INSTRUCTIONS =
  'tether demo: long-running, cancellable, interactive tools. Try report.generate with a progress token.';

/** Options of {@link createDemoApp}. */
export interface DemoAppOptions extends StackOptions {
  /** The demo's counters. Default: this process (`RecordStore`); `--redis`: on Redis, fenced. */
  records?: Records;
  /**
   * Also register the fixtures the official conformance suite calls by name (`test_*` tools and the
   * SEP-2322 prompt; `tether-demo --conformance`). Default false: `tools/list` shows the demo's tools only.
   */
  conformanceFixtures?: boolean;
}

/**
 * Create the demo application: the shared middleware stack and state, and the per-session server
 * factory that calls `tether(server, [...all middlewares])` before registering the tools.
 */
export function createDemoApp(options: DemoAppOptions = {}): DemoApp {
  const stack = createStack({ ...options, taskFixtures: options.conformanceFixtures === true });
  const records = options.records ?? new RecordStore();
  // One list of tools for both SDK lines: no copied tool code.
  const registerAll = (server: DemoServer) => {
    registerDemoTools(server, { records });
    registerInteractiveTools(server);
    registerJobTools(server, stack.jobs);
    if (options.conformanceFixtures) {
      registerConformanceFixtures(server);
      registerElicitationFixtures(server);
      registerInputRequiredFixtures(server);
      registerTaskFixtures(server);
    }
  };
  return {
    stack,
    records,
    createServer() {
      const server = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS });
      tether(server, stack.middlewares);
      registerAll(server);
      return server;
    },
    createModernServer() {
      const server = new McpServerV2(SERVER_INFO, { instructions: INSTRUCTIONS });
      tether(server, stack.middlewares);
      registerAll(server);
      return server;
    },
  };
}
