import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts', 'testing/v2': 'src/testing/v2.ts', 'testing/matrix': 'src/testing/matrix.ts', 'testing/fuzz': 'src/testing/fuzz.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: [/^@modelcontextprotocol\//, /^@mcp-tether\//, 'vitest', 'fast-check'],
});
