import { fileURLToPath } from 'node:url';
import { defineConfig, mergeConfig } from 'vitest/config';
import base from '../../vitest.base';

// Core's own tests use the test kit (@mcp-tether/testing), which depends on core: core cannot
// depend on it back (a package cycle), so both resolve to their sources here, one copy of core.
const at = (path: string) => fileURLToPath(new URL(path, import.meta.url));
export default mergeConfig(
  base,
  defineConfig({
    resolve: {
      alias: [
        { find: /^@mcp-tether\/core$/, replacement: at('./src/index.ts') },
        { find: /^@mcp-tether\/testing$/, replacement: at('../testing/src/index.ts') },
        { find: /^@mcp-tether\/testing\/(.*)$/, replacement: at('../testing/src/$1.ts') },
      ],
    },
  }),
);
