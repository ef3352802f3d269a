import { configDefaults, defineConfig } from "vitest/config";

/**
 * Three lanes, chosen by file name so a new file lands in one without a list to update:
 * `*.unit.test.ts` is pure code (the unit lane's setup refuses sockets, processes and databases),
 * `*.perf.test.ts` measures time, memory or behaviour under load (run once in CI, on one database),
 * and every other `*.test.ts` is an integration test on real servers and databases.
 * `npm test` runs unit and integration; `npm run test:unit` and `npm run test:perf` one lane each.
 *
 * `*.embedded.test.ts` is an integration test whose processes use an embedded database or none,
 * whatever DATABASE_URL says: it runs in the embedded pass only, which a Postgres pass would repeat.
 */
const UNIT = "test/**/*.unit.test.ts";
const PERF = "test/**/*.perf.test.ts";
const EMBEDDED_ONLY = "test/**/*.embedded.test.ts";
const ON_POSTGRES = (process.env.DATABASE_URL ?? "") !== "";
// The cluster tests need the replicas .ci/cluster/run starts; it runs them with their own config.
const NOT_HERE = [...configDefaults.exclude, "test/cluster/**"];

export default defineConfig({
  test: {
    // Integration files start real servers and databases; two cores run two files at a time well.
    maxWorkers: 2,
    testTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: [UNIT],
          exclude: NOT_HERE,
          setupFiles: ["test/support/unit-lane-guard.ts"],
          // Pure files can share a worker's module graph: importing the sources is most of this lane's time.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: [...NOT_HERE, UNIT, PERF, ...(ON_POSTGRES ? [EMBEDDED_ONLY] : [])],
          globalSetup: ["test/support/compiled-cli.ts", "test/support/database-template.ts"],
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "perf",
          include: [PERF],
          exclude: NOT_HERE,
          // One file at a time: each measures time or memory, which a neighbour's load would skew.
          fileParallelism: false,
          globalSetup: ["test/support/compiled-cli.ts", "test/support/database-template.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
