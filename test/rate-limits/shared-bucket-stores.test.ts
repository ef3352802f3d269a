import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testRedisUrl, usesPostgres, type TestDatabase } from "../support/test-database.js";
import { createMemoryBucketStore, type BucketStore } from "../../src/rate-limits/bucket-store.js";
import { createPostgresBucketStore } from "../../src/storage/postgres-bucket-store.js";
import { createRedisBucketStore } from "../../src/storage/redis-bucket-store.js";
import { createRateLimiter } from "../../src/rate-limits/rate-limiter.js";
import { createLogger } from "../../src/logger.js";

/**
 * Each store against the real thing (in-process memory, Postgres or PGlite, and Redis when
 * REDIS_URL names one), on its own clock: one bucket taken from concurrently hands out exactly its
 * size, a bucket refills at rates whose interval is no whole number of milliseconds, stores forget
 * buckets that are full again, and a limiter whose store is down or slow goes on limiting locally
 * and goes back to the store once it answers. The stores' clocks cannot be held still, so timings
 * are chosen for counts no delay of a busy machine can change.
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

async function eventually(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(25)) {
    if (await check()) return true;
  }
  return check();
}

describe.each(Object.keys(stores))("the %s store", (name) => {
  it("hands out exactly the burst to 60 concurrent takes, each a different token, at a rate whose interval rounds at epoch times, and keeps keys apart", async () => {
    // 0.15/s: a token every 6.7 s, so none arrives among the takes however busy the machine, and
    // 1000/0.15 ms added to an epoch time rounds up, which once made the last token unreachable.
    const limits = { rate: 0.15, burst: 25 };
    const interval = 1000 / limits.rate;
    const store = await stores[name]!();
    try {
      const one = key();
      const decisions = await Promise.all(Array.from({ length: 60 }, () => store.take(one, limits)));
      const allowed = decisions.filter((d) => d.allowed);
      expect(allowed).toHaveLength(limits.burst);
      expect(allowed.map((d) => d.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: limits.burst }, (_, i) => i));
      // Refusals spend nothing: each is told to come back within one token's interval.
      for (const refused of decisions.filter((d) => !d.allowed)) {
        expect(refused).toMatchObject({ remaining: 0, limit: limits.rate, burst: limits.burst });
        expect(refused.retryAfterMs).toBeGreaterThan(0);
        expect(refused.retryAfterMs).toBeLessThanOrEqual(Math.ceil(interval));
      }
      expect((await store.take(key(), limits)).allowed).toBe(true);
    } finally {
      await store.close();
    }
  });

  it.each([6, 7])("allows a one-token bucket at %s/s again once its interval has passed", async (rate) => {
    // 1000/6 and 1000/7 ms added to an epoch time round up: such a bucket was never allowed again.
    const limits = { rate, burst: 1 };
    const store = await stores[name]!();
    try {
      const one = key();
      const allowed = [(await store.take(one, limits)).allowed];
      for (let i = 0; i < 2; i++) {
        // Three intervals, not one: the verdict must not hang on how promptly the take arrives.
        await sleep((3 * 1000) / rate);
        allowed.push((await store.take(one, limits)).allowed);
      }
      expect(allowed).toEqual([true, true, true]);
    } finally {
      await store.close();
    }
  });
});

describe("the memory store", () => {
  it("when full, forgets buckets that are full again first, then the least recently used", async () => {
    let now = 0;
    const store = createMemoryBucketStore({ maxKeys: 2, clock: () => now });
    const slow = { rate: 0.001, burst: 1 };
    await store.take("slow", slow);
    await store.take("fast", { rate: 1, burst: 1 });
    now = 2_000;
    // "fast" is full again, so it goes before the older "slow", which is still empty.
    await store.take("third", slow);
    expect((await store.take("slow", slow)).allowed).toBe(false);
    // Every bucket in use: the least recently used ("third") goes.
    await store.take("fourth", slow);
    expect((await store.take("third", slow)).allowed).toBe(true);
  });
});

describe("the Postgres store", () => {
  const storedTat = async (k: string) =>
    (await db.database.knex("rate_limit_buckets").where({ key: k }).first())?.tat as number | undefined;

  it("deletes buckets that have long been full, and only those", async () => {
    const store = createPostgresBucketStore(db.database.knex, { cleanupIntervalMs: 20 });
    try {
      const old = key();
      await db.database.knex("rate_limit_buckets").insert({ key: old, tat: 1_000, last_take_allowed: true });
      const recent = key();
      await store.take(recent, { rate: 1, burst: 5 });
      expect(await eventually(async () => (await storedTat(old)) === undefined)).toBe(true);
      expect(await storedTat(recent)).toBeDefined();
    } finally {
      await store.close();
    }
  });

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

describe.runIf(redisUrl !== undefined)("the Redis store", () => {
  it("lets a bucket's key expire when the bucket is full again", async () => {
    const store = await createRedisBucketStore({ url: redisUrl!, onError: () => {} });
    const { createClient } = await import("redis");
    const inspector = createClient({ url: redisUrl });
    await inspector.connect();
    try {
      const one = key();
      // The store's key prefix is its own business: the random key finds it.
      const stored = async () => (await inspector.keys(`*${one}`))[0];
      await store.take(one, { rate: 20, burst: 2 });
      await store.take(one, { rate: 20, burst: 2 });
      const ttl = await inspector.pTTL((await stored())!);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(100);
      expect(await eventually(async () => (await stored()) === undefined)).toBe(true);
    } finally {
      await inspector.close();
      await store.close();
    }
  });
});

describe("the limiter around a store", () => {
  const quiet = createLogger(() => {});

  it("limits locally when the store is unreachable, and logs the outage once a minute", async () => {
    const lines: string[] = [];
    const outages = () => lines.filter((line) => line.includes("rate-limit store unavailable"));
    let now = 1_000_000;
    const store = await createRedisBucketStore({ url: "redis://127.0.0.1:1", onError: () => {} });
    const limiter = createRateLimiter({
      policies: { reads: LIMITS },
      store,
      logger: createLogger((line) => lines.push(line)),
      clock: () => now,
    });
    try {
      const one = key();
      const decisions = await Promise.all(Array.from({ length: 30 }, () => limiter.take("reads", one)));
      expect(decisions.filter((d) => d.allowed).length).toBe(LIMITS.burst);
      expect(outages()).toHaveLength(1);
      now += 30_000;
      expect((await limiter.take("reads", one)).allowed).toBe(true);
      expect(outages()).toHaveLength(1);
      now += 31_000;
      await limiter.take("reads", one);
      expect(outages()).toHaveLength(2);
    } finally {
      await limiter.close();
    }
  });

  it("goes back to the store once it answers again", async () => {
    const knex = db.database.knex;
    const limiter = createRateLimiter({
      policies: { reads: { rate: 1, burst: 3 } },
      store: createPostgresBucketStore(knex),
      logger: quiet,
      storeTimeoutMs: 2_000,
    });
    const stored = async (k: string) => (await knex("rate_limit_buckets").where({ key: `reads:${k}` })).length === 1;
    try {
      const [before, during, after] = [key(), key(), key()];
      await limiter.take("reads", before);
      expect(await stored(before)).toBe(true);
      // The store fails while its table is away; the limiter decides locally meanwhile.
      await knex.raw("alter table rate_limit_buckets rename to rate_limit_buckets_away");
      try {
        expect((await limiter.take("reads", during)).allowed).toBe(true);
      } finally {
        await knex.raw("alter table rate_limit_buckets_away rename to rate_limit_buckets");
      }
      await limiter.take("reads", after);
      expect(await stored(after)).toBe(true);
      expect(await stored(during)).toBe(false);
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
    const counted: BucketStore = {
      take: (k, limits) => {
        storeCalls++;
        return postgres.take(k, limits);
      },
      close: () => postgres.close(),
    };
    // The limiter's clock (its deny cache) is held; the store keeps the database's.
    let now = 1_000_000;
    const limiter = createRateLimiter({ policies: { reads: { rate: 0.2, burst: 3 } }, store: counted, logger: quiet, clock: () => now });
    try {
      const one = key();
      const first = await Promise.all(Array.from({ length: 4 }, () => limiter.take("reads", one)));
      expect(first.filter((d) => d.allowed)).toHaveLength(3);
      expect(storeCalls).toBe(4);
      const retryAfterMs = first.find((d) => !d.allowed)!.retryAfterMs;
      expect(retryAfterMs).toBeGreaterThan(1_000);
      now += 1_000;
      const later = await Promise.all(Array.from({ length: 50 }, () => limiter.take("reads", one)));
      expect(later.every((d) => !d.allowed && d.retryAfterMs === retryAfterMs - 1_000)).toBe(true);
      expect(storeCalls).toBe(4);
      const [row] = await db.database.knex("rate_limit_buckets").where({ key: `reads:${one}` });
      expect(row).toBeDefined();
      now += retryAfterMs - 1_000;
      await limiter.take("reads", one);
      expect(storeCalls).toBe(5);
    } finally {
      await limiter.close();
    }
  });
});
