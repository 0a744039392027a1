/**
 * tether() checks the private SDK fields its adapters rely on, and names the installed SDK version
 * when one is missing (as a future SDK release that renamed it would present itself). Real
 * McpServers of both lines, with one field taken away.
 */
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tether } from '../src/index.js';
import { SUPPORTED_SDKS } from '../src/sdkSeams.js';

const require = createRequire(import.meta.url);
// @modelcontextprotocol/server does not export its package.json: read it by path (next to dist/).
const versionOf = (pkg: string) =>
  (require(join(dirname(require.resolve(pkg)), '..', 'package.json')) as { version: string }).version;
const v1Version = () => {
  // @modelcontextprotocol/sdk maps every subpath into dist/: read its package.json by path.
  const entry = require.resolve('@modelcontextprotocol/sdk/server/mcp.js');
  return (require(entry.replace(/dist\/cjs\/server\/mcp\.js$/, 'package.json')) as { version: string }).version;
};

const info = { name: 'seams', version: '1.0.0' };

describe('tether() and the SDK seams', () => {
  it('attaches to complete servers of both lines', () => {
    expect(() => tether(new McpServerV1(info), [])).not.toThrow();
    expect(() => tether(new McpServerV2(info), [])).not.toThrow();
  });

  it('v1: a missing private field fails at tether(), naming the SDK version, the field and the supported ranges', () => {
    const server = new McpServerV1(info);
    delete (server.server as unknown as Record<string, unknown>)._requestHandlerAbortControllers;
    let error: Error | undefined;
    try {
      tether(server, []);
    } catch (e) {
      error = e as Error;
    }
    expect(error?.message).toContain(`unsupported @modelcontextprotocol/sdk version ${v1Version()}`);
    expect(error?.message).toContain('McpServer.server._requestHandlerAbortControllers (Map)');
    expect(error?.message).toContain(`@modelcontextprotocol/sdk ${SUPPORTED_SDKS.v1.range} (tested 1.30.0, 1.32.2)`);
    // nothing was attached: a complete server still attaches afterwards
    expect(() => tether(new McpServerV1(info), [])).not.toThrow();
  });

  it('v1: a renamed McpServer method is reported too', () => {
    const server = new McpServerV1(info);
    (server as unknown as Record<string, unknown>)._createRegisteredTool = undefined;
    expect(() => tether(server, [])).toThrow(/McpServer\._createRegisteredTool \(function\)/);
  });

  it('v2: a missing private field fails at tether(), naming @modelcontextprotocol/server and its version', () => {
    const server = new McpServerV2(info);
    (server.server as unknown as Record<string, unknown>)._wrapHandler = undefined;
    delete (server as unknown as Record<string, unknown>)._toolHandlersInitialized;
    expect(() => tether(server, [])).toThrow(
      new RegExp(
        `unsupported @modelcontextprotocol/server version ${versionOf('@modelcontextprotocol/server').replace(/\./g, '\\.')}: ` +
          'this McpServer lacks McpServer\\._toolHandlersInitialized \\(boolean\\), McpServer\\.server\\._wrapHandler \\(function\\)',
      ),
    );
  });

  it('anything that is no McpServer keeps the plain error', () => {
    expect(() => tether(new McpServerV1(info).server, [])).toThrow(/expects an McpServer/);
    expect(() => tether({}, [])).toThrow(/expects an McpServer/);
  });
});
