import { defineConfig } from 'vitest/config';

// The quick run spawns child processes and can be slow on a loaded CI machine: generous timeouts.
export default defineConfig({
  test: { include: ['test/**/*.test.ts'], testTimeout: 180_000, hookTimeout: 60_000 },
});
