import { defineConfig } from 'vitest/config';

export default defineConfig({
  // --expose-gc: the 1 000-jobs test compares the heap with its baseline after a full collection.
  test: { include: ['test/**/*.test.ts'], testTimeout: 150_000, hookTimeout: 150_000, execArgv: ['--expose-gc'] },
});
