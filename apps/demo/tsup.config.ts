import { defineConfig } from 'tsup';

// An app, not a library: ESM only, no declarations; dependencies stay external (node_modules).
export default defineConfig({
  entry: { bin: 'src/bin.ts', client: 'src/client.ts', index: 'src/index.ts' },
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
