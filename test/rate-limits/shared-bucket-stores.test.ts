import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testRedisUrl, usesPostgres, type TestDatabase } from "../support/test-database.js";
import { createMemoryBucketStore, type BucketStore } from "../../src/rate-limits/bucket-store.js";
import { createPostgresBucketStore } from "../../src/rate-limits/postgres-bucket-store.js";
import { createRedisBucketStore } from "../../src/rate-limits/redis-bucket-store.js";
import { createRateLimiter } from "../../src/rate-limits/rate-limiter.js";
import { createLogger } from "../../src/logger.js";

/**
 * Each store against the real thing (in-process memory, Postgres or PGlite, and Redis when
 * REDIS_URL names one):
 * one bucket taken from concurrently hands out exactly its size, and a limiter whose store is
 * down or slow goes on limiting locally.
 */

const LIMITS = { rate: 1, burst: 25 };
let db: TestDatabase;
const stores: Record<string, () => Promise<BucketStore>> = {
  memory: async () => createMemoryBucketStore(),
  database: async () => createPostgresBucketStore(db.database.knex),
};
const redisUrl = testRedisUrl();
if (redisUrl !== undefined) stores.redis = () => createRedisBucketStore({ url: redisUrl, onError: () => {} });

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const key = () => `test-${randomBytes(6).toString("hex")}`;

describe.each(Object.keys(stores))("the %s store", (name) => {
  it("hands out exactly the burst to 60 concurrent takes, and keeps keys apart", async () => {
    const store = await stores[name]!();
    try {
      const one = key();
      const decisions = await Promise.all(Array.from({ length: 60 }, () => store.take(one, LIMITS)));
      // At 1 token/s, a refill during the burst is possible but at most one.
      const allowed = decisions.filter((d) => d.allowed).length;
      expect(allowed).toBeGreaterThanOrEqual(LIMITS.burst);
      expect(allowed).toBeLessThanOrEqual(LIMITS.burst + 1);
      const refused = decisions.find((d) => !d.allowed)!;
      expect(refused.remaining).toBe(0);
      expect(refused.retryAfterMs).toBeGreaterThan(0);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(1000);
      expect((await store.take(key(), LIMITS)).allowed).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describe("the Postgres store", () => {
  it.runIf(usesPostgres())("decides on the time its bucket's row is locked, not when its statement began", async () => {
    // Two takes that reach the row in the other order than they read the clock: the one that
    // waited must not see the other's take as made in its future (and refuse a bucket not empty).
    const store = createPostgresBucketStore(db.database.knex);
    const limits = { rate: 0.1, burst: 2 };
    const one = key();
    const other = await db.database.knex.transaction();
    try {
      await other.raw("insert into rate_limit_buckets (key, tat, last_take_allowed) values (?, 0, true)", [one]);
      const waiting = store.take(one, limits);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The other take, its clock read now: one of the bucket's two tokens is gone.
      await other.raw("update rate_limit_buckets set tat = extract(epoch from clock_timestamp()) * 1000 + 10000 where key = ?", [one]);
      await other.commit();
      const decision = await waiting;
      expect(decision).toMatchObject({ allowed: true, remaining: 0 });
    } finally {
      if (!other.isCompleted()) await other.rollback();
      await store.close();
    }
  });
});

describe("the limiter around a store", () => {
  const quiet = createLogger(() => {});

  it("limits locally when the store is unreachable, and logs the outage once", async () => {
    const lines: string[] = [];
    const store = await createRedisBucketStore({ url: "redis://127.0.0.1:1", onError: () => {} });
    const limiter = createRateLimiter({ policies: { reads: LIMITS }, store, logger: createLogger((line) => lines.push(line)) });
    try {
      const one = key();
      const decisions = await Promise.all(Array.from({ length: 30 }, () => limiter.take("reads", one)));
      expect(decisions.filter((d) => d.allowed).length).toBe(LIMITS.burst);
      expect(lines.filter((line) => line.includes("rate-limit store unavailable"))).toHaveLength(1);
    } finally {
      await limiter.close();
    }
  });

  it("limits locally when the store answers too slowly", async () => {
    const slow: BucketStore = {
      take: (k, limits) => new Promise((resolve) => setTimeout(() => resolve(createMemoryBucketStore().take(k, limits)), 500)),
      close: async () => {},
    };
    const limiter = createRateLimiter({ policies: { reads: { rate: 1, burst: 2 } }, store: slow, logger: quiet, storeTimeoutMs: 20 });
    const one = key();
    const started = Date.now();
    const decisions = [await limiter.take("reads", one), await limiter.take("reads", one), await limiter.take("reads", one)];
    expect(Date.now() - started).toBeLessThan(400);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
  });

  it("waits longer for the store on a policy that says so", async () => {
    // Each take of this store answers from a fresh bucket: allowed. Only a local decision refuses.
    const slow: BucketStore = {
      take: (k, limits) => new Promise((resolve) => setTimeout(() => resolve(createMemoryBucketStore().take(k, limits)), 300)),
      close: async () => {},
    };
    const limiter = createRateLimiter({
      policies: { reads: { rate: 1, burst: 1 }, writes: { rate: 1, burst: 1, storeTimeoutMs: 5_000 } },
      store: slow,
      logger: quiet,
      storeTimeoutMs: 20,
    });
    const one = key();
    const reads = [await limiter.take("reads", one), await limiter.take("reads", one)];
    const writes = [await limiter.take("writes", one), await limiter.take("writes", one)];
    expect(reads.map((d) => d.allowed)).toEqual([true, false]);
    expect(writes.map((d) => d.allowed)).toEqual([true, true]);
  });

  it("keeps each policy's buckets apart: one key's reads do not spend its writes", async () => {
    const limiter = createRateLimiter({
      policies: { reads: { rate: 1, burst: 2 }, writes: { rate: 1, burst: 2 } },
      store: createPostgresBucketStore(db.database.knex),
      logger: quiet,
    });
    try {
      const one = key();
      await Promise.all(Array.from({ length: 3 }, () => limiter.take("reads", one)));
      expect((await limiter.take("writes", one)).remaining).toBe(1);
      const rows = await db.database.knex("rate_limit_buckets").whereIn("key", [`reads:${one}`, `writes:${one}`]);
      expect(rows).toHaveLength(2);
    } finally {
      await limiter.close();
    }
  });

  it("asks the store nothing more about a refused key until its retry time", async () => {
    const postgres = createPostgresBucketStore(db.database.knex);
    let storeCalls = 0;
    // The real store, counted on the way in: the deny cache must keep calls from reaching it.
    const counted: BucketStore = { take: (k, limits) => (storeCalls++, postgres.take(k, limits)), close: () => postgres.close() };
    const limiter = createRateLimiter({ policies: { reads: { rate: 0.2, burst: 3 } }, store: counted, logger: quiet });
    try {
      const one = key();
      const first = await Promise.all(Array.from({ length: 4 }, () => limiter.take("reads", one)));
      expect(first.filter((d) => d.allowed)).toHaveLength(3);
      expect(storeCalls).toBe(4);
      const later = await Promise.all(Array.from({ length: 50 }, () => limiter.take("reads", one)));
      expect(later.every((d) => !d.allowed && d.retryAfterMs > 0)).toBe(true);
      expect(storeCalls).toBe(4);
      const [row] = await db.database.knex("rate_limit_buckets").where({ key: `reads:${one}` });
      expect(row).toBeDefined();
    } finally {
      await limiter.close();
    }
  });
});
