import { defineConfig } from "vitest/config";

/**
 * The cluster tests (test/cluster/), run by .ci/cluster/run against the replicas, Postgres standby,
 * Redis and nginx it starts; `npm test` leaves them out. One file at a time: they share the cluster,
 * and one pauses the standby's replay.
 */
export default defineConfig({
  test: {
    include: ["test/cluster/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
