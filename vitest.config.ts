import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests that start servers bind their own ports; files run in parallel on the two CI cores.
    pool: 'forks',
  },
});
