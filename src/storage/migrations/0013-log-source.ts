import type { Knex } from "knex";

/**
 * Which log a mirror's database copies: the verifier key (C2SP signed-note form, naming the
 * origin) of the registry it follows, written by `registry mirror` with its first records. A
 * registry served on this database reads it at start: it publishes that key rather than its own,
 * signs no checkpoints and refuses writes (docs/feed.md, "Mirroring").
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table registry_log_source (
      only_row boolean primary key default true check (only_row),
      verifier_key text not null,
      since timestamptz not null default now()
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop table registry_log_source");
}
