/**
 * The client's private SDK fields are checked through core's one seam table when a client is
 * wrapped (and so by `connect`): a Client of either line that lacks one fails at once, naming the
 * SDK package and its installed version, instead of quietly losing the final progress or the pause
 * while asking. Something that is no Client at all is a TypeError.
 */
import { SdkSeamError } from '@mcp-tether/core';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { tetherClient } from '../src/index.js';
import { readFileSync } from 'node:fs';

/** The installed version of an SDK package (this package's own devDependency). */
const versionOf = (pkg: string): string =>
  JSON.parse(readFileSync(new URL(`../node_modules/${pkg}/package.json`, import.meta.url), 'utf8')).version;

const lines = [
  {
    line: 'v1',
    make: () => new ClientV1({ name: 'c', version: '1' }),
    pkg: '@modelcontextprotocol/sdk',
    version: versionOf('@modelcontextprotocol/sdk'),
  },
  {
    line: 'v2',
    make: () => new ClientV2({ name: 'c', version: '1' }),
    pkg: '@modelcontextprotocol/client',
    version: versionOf('@modelcontextprotocol/client'),
  },
] as const;

for (const { line, make, pkg, version } of lines) {
  describe(`SDK ${line} Client`, () => {
    it('a complete Client is wrapped', () => {
      expect(tetherClient(make() as never).sdk).toBe(line);
    });

    for (const field of ['_notificationHandlers', '_requestHandlers']) {
      it(`without ${field}: SdkSeamError naming ${pkg} and its version`, () => {
        const client = make() as unknown as Record<string, unknown>;
        delete client[field];
        let error: unknown;
        try {
          tetherClient(client as never);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(SdkSeamError);
        const e = error as SdkSeamError;
        expect(e.sdk).toBe(pkg);
        expect(e.version).toBe(version);
        expect(e.missing).toEqual([`Client.${field} (Map)`]);
        expect(e.message).toContain(`${pkg} version ${version}`);
        expect(e.message).toContain('@mcp-tether/client relies on');
      });
    }
  });
}

it('something that is no Client is a TypeError', () => {
  expect(() => tetherClient({ callTool: async () => ({}), request: async () => ({}) } as never)).toThrow(TypeError);
});
