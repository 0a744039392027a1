/**
 * The seam table (SDK_SEAMS) against the lowest and the highest SDK version of each declared peer
 * range: every entry is checked on real objects of each version, and tether() attaches to and
 * serves a call on the lowest SDK 1.x through that version's own client and transport.
 *
 * The lowest versions are devDependency aliases (`sdk-v1-lowest` = `npm:@modelcontextprotocol/sdk@1.30.0`,
 * ...) that pnpm installs with the workspace, so the test needs no network; the highest are the
 * versions the workspace tests (the devDependencies, the newest published when they were set). A
 * range raised in the peer dependencies without its alias moving along fails here.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tether } from '../src/index.js';
import { assertSeams, missingSeams, SDK_SEAMS, type SeamTargetName, SUPPORTED_SDKS } from '../src/sdkSeams.js';

const require = createRequire(import.meta.url);
const core = require('../package.json') as {
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The installed version of `pkg` (an alias or a real name), read from its package.json by path. */
function versionOf(pkg: string, entry: string): string {
  let dir = dirname(require.resolve(entry));
  for (let i = 0; i < 8; i++, dir = dirname(dir)) {
    try {
      const manifest = require(join(dir, 'package.json')) as { name?: string; version?: string };
      if (manifest.version && manifest.name?.startsWith('@modelcontextprotocol/')) return manifest.version;
    } catch {
      /* keep climbing */
    }
  }
  throw new Error(`no package.json found above ${entry} (${pkg})`);
}

const lowestOf = (range: string) => range.replace(/^[\^~]/, '');

interface Build {
  v1?: string;
  server?: string;
  client?: string;
}
const VERSIONS: Array<{ label: string; pkgs: Build; expected: 'lowest' | 'tested' }> = [
  {
    label: 'lowest',
    pkgs: { v1: 'sdk-v1-lowest', server: 'sdk-v2-server-lowest', client: 'sdk-v2-client-lowest' },
    expected: 'lowest',
  },
  {
    label: 'highest (tested)',
    pkgs: {
      v1: '@modelcontextprotocol/sdk',
      server: '@modelcontextprotocol/server',
      client: '@modelcontextprotocol/client',
    },
    expected: 'tested',
  },
];

/** Real SDK objects of one version, one per SDK_SEAMS entry. */
function objectsOf(b: Build): Record<SeamTargetName, unknown> {
  const v1Mcp = require(`${b.v1}/server/mcp.js`) as { McpServer: new (i: object) => unknown };
  const v1Web = require(`${b.v1}/server/webStandardStreamableHttp.js`) as {
    WebStandardStreamableHTTPServerTransport: new (o: object) => unknown;
  };
  const v1Client = require(`${b.v1}/client/index.js`) as { Client: new (i: object) => unknown };
  const v2 = require(b.server!) as {
    McpServer: new (i: object) => unknown;
    WebStandardStreamableHTTPServerTransport: new (o: object) => unknown;
    PerRequestHTTPServerTransport: new (o: object) => unknown;
  };
  const v2Client = require(b.client!) as { Client: new (i: object) => unknown };
  const info = { name: 'seams', version: '1.0.0' };
  return {
    mcpServerV1: new v1Mcp.McpServer(info),
    mcpServerV2: new v2.McpServer(info),
    webTransportV1: new v1Web.WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => 's' }),
    webTransportV2: new v2.WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => 's' }),
    perRequestTransportV2: new v2.PerRequestHTTPServerTransport({}),
    clientV1: new v1Client.Client(info),
    clientV2: new v2Client.Client(info),
  };
}

describe('the SDK versions under test are the ends of the declared ranges', () => {
  it('the table names the ranges core declares', () => {
    expect(SUPPORTED_SDKS.v1.range).toBe(core.peerDependencies['@modelcontextprotocol/sdk']);
    expect(SUPPORTED_SDKS.v2.range).toBe(core.peerDependencies['@modelcontextprotocol/server']);
  });

  it('the lowest aliases are the lowest of each range; the highest are the tested versions', () => {
    const [lowest, highest] = VERSIONS;
    expect(versionOf('sdk-v1-lowest', `${lowest!.pkgs.v1}/server/mcp.js`)).toBe(lowestOf(SUPPORTED_SDKS.v1.range));
    expect(versionOf('sdk-v2-server-lowest', lowest!.pkgs.server!)).toBe(lowestOf(SUPPORTED_SDKS.v2.range));
    expect(versionOf('sdk-v2-client-lowest', lowest!.pkgs.client!)).toBe(lowestOf(SUPPORTED_SDKS['v2-client'].range));
    expect(versionOf('sdk', `${highest!.pkgs.v1}/server/mcp.js`)).toBe(
      core.devDependencies['@modelcontextprotocol/sdk'],
    );
    expect(versionOf('server', highest!.pkgs.server!)).toBe(core.devDependencies['@modelcontextprotocol/server']);
    expect(versionOf('client', highest!.pkgs.client!)).toBe(core.devDependencies['@modelcontextprotocol/client']);
    expect(SUPPORTED_SDKS.v1.tested).toContain(core.devDependencies['@modelcontextprotocol/sdk']);
    expect(SUPPORTED_SDKS.v2.tested).toContain(core.devDependencies['@modelcontextprotocol/server']);
  });
});

for (const { label, pkgs } of VERSIONS) {
  describe(`every seam on the ${label} SDKs`, () => {
    const objects = objectsOf(pkgs);
    for (const name of Object.keys(SDK_SEAMS) as SeamTargetName[]) {
      it(`${name}: ${SDK_SEAMS[name].label} has every field ${SDK_SEAMS[name].user} reads`, () => {
        expect(missingSeams(name, objects[name])).toEqual([]);
        expect(() => assertSeams(name, objects[name])).not.toThrow();
      });
    }

    it('tether() serves a call on SDK 1.x of this version, through its own client and transport', async () => {
      const { McpServer } = require(`${pkgs.v1}/server/mcp.js`) as { McpServer: new (i: object) => any };
      const { Client } = require(`${pkgs.v1}/client/index.js`) as { Client: new (i: object) => any };
      const { InMemoryTransport } = require(`${pkgs.v1}/inMemory.js`) as { InMemoryTransport: any };
      const server = tether(new McpServer({ name: 's', version: '1.0.0' }), [
        { name: 'mark', handle: async (_ctx, next) => ({ ...(await next()), _meta: { tethered: true } }) },
      ]);
      server.registerTool('echo', {}, async () => ({ content: [{ type: 'text', text: 'ok' }] }));
      const [a, b] = InMemoryTransport.createLinkedPair();
      const client = new Client({ name: 'c', version: '1.0.0' });
      await Promise.all([server.connect(a), client.connect(b)]);
      const result = await client.callTool({ name: 'echo', arguments: {} });
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'ok' }], _meta: { tethered: true } });
      await client.close();
    });
  });
}

describe('a missing seam fails loudly, with the SDK version', () => {
  it('names the package, its version, the field and who relies on it', () => {
    const objects = objectsOf(VERSIONS[1]!.pkgs);
    const transport = objects.webTransportV1 as Record<string, unknown>;
    delete transport._requestToStreamMapping;
    expect(() => assertSeams('webTransportV1', transport)).toThrow(
      /unsupported @modelcontextprotocol\/sdk version \d+\.\d+\.\d+: this WebStandardStreamableHTTPServerTransport lacks WebStandardStreamableHTTPServerTransport\._requestToStreamMapping \(Map\), which @mcp-tether\/http relies on/,
    );
    const client = objects.clientV2 as Record<string, unknown>;
    client._notificationHandlers = {};
    expect(() => assertSeams('clientV2', client)).toThrow(
      /unsupported @modelcontextprotocol\/client version \d+\.\d+\.\d+: this Client lacks Client\._notificationHandlers \(Map\), which @mcp-tether\/client relies on/,
    );
  });
});
