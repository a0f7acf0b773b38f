import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One file at a time on a 2-core machine: vitest's default maxWorkers is cores − 1. That is deliberate for
    // now: 13 files assert wall-clock bounds (graceful stop, joins, the witness, lockout backoff, the S3 retries),
    // and two server-starting files side by side on two cores make those bounds flaky. Tests that start servers
    // still bind their own ports, so a machine with more cores runs files in parallel.
    pool: 'forks',
  },
});
