import type { Knex } from "knex";

/**
 * Token buckets of the read rate limit, shared by replicas (src/storage/postgres-bucket-store.ts).
 * UNLOGGED: it is a record of the last seconds of traffic, so it skips the write-ahead log, and a
 * crash that empties it only gives every client a full bucket.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create unlogged table rate_limit_buckets (
      key text primary key,
      -- The bucket's theoretical arrival time, in epoch milliseconds (src/rate-limits/gcra.ts).
      tat double precision not null,
      -- Whether the last take was allowed: lets one statement report its verdict (see the store).
      last_take_allowed boolean not null
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop table rate_limit_buckets");
}
