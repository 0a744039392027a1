import { tether } from '@mcp-tether/core';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createStack, type DemoStack, type StackOptions } from './middlewares.js';
import { RecordStore } from './state.js';
import { registerConformanceFixtures } from './tools/conformance.js';
import { registerDemoTools } from './tools/demo.js';
import { registerElicitationFixtures, registerInteractiveTools } from './tools/interactive.js';

/** Name and version the demo announces in `initialize`. */
export const SERVER_INFO = { name: 'tether-demo', version: '0.1.0' } as const;

/** Everything one process shares between its sessions. */
export interface DemoApp {
  readonly stack: DemoStack;
  readonly records: RecordStore;
  /** A fresh, fully wired `McpServer` (one per session on HTTP, one per process on stdio). */
  createServer(): McpServer;
}

/**
 * Create the demo application: the shared middleware stack and state, and the per-session server
 * factory that calls `tether(server, [...all middlewares])` before registering the tools.
 */
export function createDemoApp(options: StackOptions = {}): DemoApp {
  const stack = createStack(options);
  const records = new RecordStore();
  return {
    stack,
    records,
    createServer() {
      const server = new McpServer(SERVER_INFO, {
        instructions: 'tether demo: long-running, cancellable, interactive tools. Try report.generate with a progress token.',
      });
      tether(server, stack.middlewares);
      registerDemoTools(server, { records });
      registerInteractiveTools(server);
      registerConformanceFixtures(server);
      registerElicitationFixtures(server);
      return server;
    },
  };
}
