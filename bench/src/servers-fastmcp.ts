/**
 * punkpeye's FastMCP (npm `fastmcp`) serving the same trivial tool. FastMCP wraps the SDK's
 * low-level `Server`; `FastMCP.connect(transport)` serves any SDK transport in-process (used here
 * with the SDK's InMemoryTransport; sessions made this way get FastMCP's HTTP-stream defaults).
 */
import { FastMCP } from 'fastmcp';
import { z } from 'zod';
import { echoResult, echoSchema, INFO } from './servers.js';

export function echoFastMcp(): FastMCP {
  const server = new FastMCP({ name: INFO.name, version: '1.0.0' });
  server.addTool({ name: 'echo', parameters: z.object(echoSchema), execute: async ({ n }) => echoResult(n) });
  return server;
}
