import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The cluster tests need the replicas .ci/cluster/run starts; it runs them with their own config.
    exclude: [...configDefaults.exclude, "test/cluster/**"],
    // Each file starts real servers and databases; two cores run two files at a time well.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
