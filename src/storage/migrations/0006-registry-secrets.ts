import type { Knex } from "knex";

/**
 * Secrets the registry makes for itself and every replica must share, such as the key that signs
 * page cursors. Kept in the database so that replicas agree without an operator-chosen default;
 * an operator may still supply one from the environment instead (REGISTRY_CURSOR_SECRET).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table registry_secrets (
      name text primary key,
      secret bytea not null,
      created_at timestamptz not null default now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop table registry_secrets");
}
