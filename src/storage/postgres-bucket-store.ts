import type { Knex } from "knex";
import type { BucketStore } from "../rate-limits/bucket-store.js";
import { decisionAt, TIME_GRAIN_MS, tokenInterval } from "../rate-limits/gcra.js";
import { preparedQuery } from "./prepared-query.js";

/**
 * One statement per decision, on the database's clock so replicas with skewed clocks agree. A new
 * bucket is full, so its first take is allowed; for an existing one ON CONFLICT locks the row and
 * computes from its current TAT, so concurrent takes of one bucket serialise and never both spend
 * the last token. The clock is a CTE the insert itself does not read: it is evaluated when first
 * needed, once the row is locked, so a take that waited for the lock decides on the time it got
 * it. (Read when the statement began, a take that read the clock before another but reached the
 * row after it would see that take as made in its future, and refuse a bucket not yet empty.) A
 * refusal keeps the TAT and records the verdict in the row, so RETURNING tells both the verdict
 * and the exact TAT the retry time follows from (SET sees the row's old values). Times are taken
 * down to whole grains ($4 per ms) exactly as gcra.ts does, so no sum rounds.
 */
const NOW = "(select now from clock)";
const START = `floor(greatest(bucket.tat, ${NOW}) * $4::float8) / $4::float8`;
const FITS = `${START} + $2::float8 - ${NOW} <= $3::float8`;
const TAKE_SQL = `
  with clock as materialized (select (extract(epoch from clock_timestamp()) * 1000)::float8 as now)
  insert into rate_limit_buckets as bucket (key, tat, last_take_allowed)
  values ($1::text, floor((extract(epoch from clock_timestamp()) * 1000)::float8 * $4::float8) / $4::float8 + $2::float8, true)
  on conflict (key) do update set
    last_take_allowed = ${FITS},
    tat = case when ${FITS} then ${START} + $2::float8 else bucket.tat end
  returning bucket.tat, bucket.last_take_allowed as allowed, ${NOW} as now`;

/** Buckets whose TAT passed this long ago are full; their rows can go. */
const FORGET_AFTER_MS = 60_000;

export interface PostgresBucketStoreOptions {
  /** How often expired buckets are deleted. */
  readonly cleanupIntervalMs?: number;
}

export function createPostgresBucketStore(knex: Knex, options: PostgresBucketStoreOptions = {}): BucketStore {
  const cleanup = setInterval(() => {
    // Losing a cleanup round only leaves a few more rows until the next one.
    knex
      .raw("delete from rate_limit_buckets where tat < (extract(epoch from clock_timestamp()) * 1000)::float8 - ?", [FORGET_AFTER_MS])
      .catch(() => {});
  }, options.cleanupIntervalMs ?? 60_000);
  cleanup.unref();

  return {
    async take(key, limits) {
      const interval = tokenInterval(limits);
      const [row] = await preparedQuery<{ now: number; tat: number; allowed: boolean }>(knex, "rate_limit_take", TAKE_SQL, [
        key,
        interval,
        limits.burst * interval,
        1 / TIME_GRAIN_MS,
      ]);
      if (row === undefined) throw new Error("rate_limit_take returned no row");
      return decisionAt(limits, row.now, row.tat, row.allowed);
    },
    async close() {
      clearInterval(cleanup);
    },
  };
}
