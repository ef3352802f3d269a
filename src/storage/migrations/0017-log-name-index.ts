import type { Knex } from "knex";

/**
 * A name's records in index order: GET /v1/entries/{did}/history walks them from an index on, a
 * page at a time, without reading the rest of the log.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("create index if not exists registry_log_name on registry_log (base_did, log_index)");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop index if exists registry_log_name");
}
