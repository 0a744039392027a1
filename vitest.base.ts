import { defineConfig } from 'vitest/config';

/** The test settings every package shares (packages/<name>/vitest.config.ts re-exports this). */
export default defineConfig({
  test: { include: ['test/**/*.test.ts'], testTimeout: 150_000, hookTimeout: 150_000 },
});
