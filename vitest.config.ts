import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // A test file mostly waits on its appliance, its child processes or Chromium: one file per core
    // (Vitest's default leaves one core idle, which on the 2-core build machine ran the files one at a
    // time: 11.2 min against 7.2 min for the same green suite). Two at once is also load they must take.
    maxWorkers: availableParallelism(),
    reporters: ['default'],
  },
});
