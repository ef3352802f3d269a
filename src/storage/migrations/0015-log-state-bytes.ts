import type { Knex } from "knex";

/**
 * Each record's weight: the length of its entry state as text, which is about what a reader
 * holds and sends for it. Pages of the change log are bounded by the sum (docs/feed.md), so a
 * run of the largest entries cannot make one page, or one stream's batch, hundreds of megabytes.
 * Stored, so a page reads a number per row instead of rendering each entry twice.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table registry_log
      add column state_bytes integer generated always as (octet_length(entry_state::text)) stored
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("alter table registry_log drop column state_bytes");
}
