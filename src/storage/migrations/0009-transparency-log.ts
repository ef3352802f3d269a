import type { Knex } from "knex";

/**
 * The transparency log over the change log (docs/transparency.md).
 *
 * - registry_log.record: a record's canonical bytes, set when the record is integrated into the
 *   tree and never changed after, so the tree's leaves can always be re-hashed from them.
 * - registry_tree_hashes: the tree's stored hashes (the roots of its complete subtrees), one row
 *   each, keyed by their position in append order (src/transparency/stored-hashes.ts).
 * - registry_tree_head: how many records the tree holds and its root. Its row lock makes one
 *   integrator at a time, whichever process runs it.
 * - registry_checkpoints: every signed checkpoint made, by tree size.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table registry_log add column record bytea;

    create table registry_tree_hashes (
      stored_index bigint primary key,
      hash bytea not null
    );

    create table registry_tree_head (
      only_row boolean primary key default true check (only_row),
      size bigint not null,
      root bytea not null
    );
    -- The empty tree: its root is SHA-256 of no bytes.
    insert into registry_tree_head (size, root)
      values (0, '\\xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');

    -- The last record of an entry: what a proof of that entry's current state points at.
    create index registry_log_entry_did on registry_log ((entry_state->>'entry_did'), log_index);

    create table registry_checkpoints (
      size bigint primary key,
      root bytea not null,
      note text not null,
      created_at timestamptz not null default now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table registry_checkpoints;
    drop table registry_tree_head;
    drop table registry_tree_hashes;
    alter table registry_log drop column record;
  `);
}
