import type { Knex } from "knex";

/**
 * Indexes that keep every documented discovery filter and order off sequential scans at a million
 * entries (docs/performance.md#discovery-at-a-million-entries). Each btree ends in `sequence`, the
 * tie-breaker of every discovery order, so a keyset page resumes with an index range, not a sort.
 *
 * pg_trgm serves case-insensitive substring search (CONTAINS) on names and descriptions; PGlite
 * ships it too, and loads it when the database opens (src/storage/database.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create extension if not exists pg_trgm;

    -- Newest first within a type, a publisher, or the latest versions: the default order.
    create index entries_type_sequence on entries (entry_type, sequence);
    create index entries_publisher_sequence on entries (publisher_did, sequence);
    create index entries_latest_sequence on entries (sequence) where is_latest;
    -- Ranges and orders by time and by SemVer precedence.
    create index entries_published_at_sequence on entries (published_at, sequence);
    create index entries_version_key_sequence on entries (version_key, sequence);
    -- Exact lookups by versioned DID (the interface's own example query).
    create index entries_entry_did on entries (entry_did);
    -- Membership and containment: tags CONTAINS, data.<path> = value.
    create index entries_tags on entries using gin (tags);
    create index entries_data on entries using gin (data jsonb_path_ops);
    -- Substrings: description / name CONTAINS, LIKE '%...%'.
    create index entries_description_trigram on entries using gin (description gin_trgm_ops);
    create index entries_name_trigram on entries using gin (name gin_trgm_ops);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index entries_type_sequence, entries_publisher_sequence, entries_latest_sequence,
      entries_published_at_sequence, entries_version_key_sequence, entries_entry_did, entries_tags,
      entries_data, entries_description_trigram, entries_name_trigram;
  `);
}
