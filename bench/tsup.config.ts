import { defineConfig, type Options } from 'tsup';

// Transpile file by file (no bundling): each scenario runs in its own process from dist/, with no
// TypeScript loader thread in the measured processes.
export const options: Options = {
  entry: ['src/**/*.ts'],
  bundle: false,
  format: ['esm'],
  target: 'node20',
  outDir: 'dist',
  clean: true,
  dts: false,
  sourcemap: false,
};

export default defineConfig(options);
