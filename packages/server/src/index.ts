/**
 * @mcp-tether/server — a production MCP server on one page: every tether package assembled in the
 * right order, one registration per tool served to both protocol eras over Streamable HTTP or stdio.
 * @packageDocumentation
 */
import './ask.js'; // declares ctx.ask / ctx.confirm
import '@mcp-tether/log-channel'; // declares ctx.log
import '@mcp-tether/progress'; // declares ctx.progress

export { createApp, type App, type AppOptions, type SdkLine, type Served } from './app.js';
export { AskPending } from './ask.js';
export { toResult, type ContentBlock, type ToolResult, type ToolReturn } from './result.js';
export type { Stack, StackSettings } from './stack.js';
export type { ArgsOf, ToolConfig, ToolHandler, ZodShape } from './tools.js';
// What handlers use most, so one import serves a whole server:
export { sleep } from '@mcp-tether/cancel';
export { progress } from '@mcp-tether/progress';
export { ask } from '@mcp-tether/mrtr';
