import type { Knex } from "knex";

/**
 * Entries: one row per published version. `entry_names` holds one row per entry DID (without
 * version): its owner, and the row a write locks so that the version rules of one entry are
 * serialised while different entries are written in parallel.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table entry_names (
      base_did text primary key,
      entry_type text not null,
      name text not null,
      publisher_did text not null,
      created_at timestamptz not null default now()
    );

    -- One global counter for every entry ever created: the entry's sequence.
    create sequence entry_sequence as bigint;

    create table entries (
      sequence bigint primary key,
      base_did text not null references entry_names (base_did),
      -- Unique through (base_did, version_key); the check keeps the derived column honest
      -- without the cost of another index on every insert.
      entry_did text not null check (entry_did = base_did || '@' || version),
      entry_type text not null,
      name text not null,
      version text not null,
      -- SemVer precedence as a byte-ordered string (see src/domain/semver-order.ts); a one-to-one
      -- function of version, so it also identifies the version.
      version_key text collate "C" not null,
      is_prerelease boolean not null,
      publisher_did text not null,
      published_at timestamptz not null,
      description text not null,
      tags text[] not null,
      data jsonb not null,
      content_hash text not null,
      bond_amount text not null,
      -- bond_amount split for ordering within one unit; null when there is no bond.
      bond_value numeric,
      bond_unit text,
      signature text not null,
      status text not null check (status in ('active', 'revoked')),
      revoked_at timestamptz,
      revocation_reason text,
      is_latest boolean not null default false,
      created_at timestamptz not null default now(),
      -- A version is published once, ever; the same index orders an entry's versions for listing
      -- and for choosing the latest, and finds one version.
      constraint entries_version_once unique (base_did, version_key),
      constraint entries_revocation_complete check (
        (status = 'active' and revoked_at is null and revocation_reason is null) or
        (status = 'revoked' and revoked_at is not null and revocation_reason is not null)
      )
    );

    -- At most one latest version per entry, enforced by the database itself.
    create unique index entries_one_latest on entries (base_did) where is_latest;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table entries;
    drop sequence entry_sequence;
    drop table entry_names;
  `);
}
