/** The tether demo server, as a library (the CLI is `bin.ts`, the walkthrough client `client.ts`). */
export { createDemoApp, SERVER_INFO, type DemoApp, type DemoAppOptions } from './server.js';
export { createStack, DEADLINES, lockKey, type DemoStack, type StackOptions } from './middlewares.js';
export { startHttp, LOOPBACK_HOSTNAMES, type HttpOptions, type RunningHttp } from './http.js';
export { MemoryEventStore, type SessionInfo } from '@mcp-tether/http';
export { RecordStore, getInvoice, formatCents, type Invoice } from './state.js';
