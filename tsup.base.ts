import { defineConfig, type Options } from 'tsup';

/**
 * The build every publishable package shares (packages/<name>/tsup.config.ts calls this): ESM and
 * CJS with declarations for both, Node 20, the SDKs and our own packages left external (peers and
 * dependencies, resolved from the user's node_modules). `overrides` adds entries or externals.
 */
export function packageConfig(overrides: Options = {}) {
  return defineConfig({
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    ...overrides,
    external: [/^@modelcontextprotocol\//, /^@mcp-tether\//, ...(overrides.external ?? [])],
  });
}
