import type { Knex } from "knex";

/**
 * revokedAt became queryable so a mirror can ask for the revocations since its last poll
 * (`revokedAt > '...'`). Only revoked entries have one, so a partial index stays as small as the
 * revocations are few, and ends in `sequence` like every discovery index.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("create index entries_revoked_at_sequence on entries (revoked_at, sequence) where revoked_at is not null");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop index entries_revoked_at_sequence");
}
