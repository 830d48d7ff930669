import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{src,wire,api,cluster,storage,bench}/**/*.test.ts'],
    testTimeout: 30000,
  },
});
