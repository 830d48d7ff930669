import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{src,wire,api,cluster,storage,bench}/**/*.test.ts'],
    testTimeout: 30000,
    // Most test files wait on brokers, timers and child processes rather than on the CPU, so
    // three files run at once even on two cores (vitest's default is one fewer than the cores).
    maxWorkers: 3,
    minWorkers: 1,
  },
});
