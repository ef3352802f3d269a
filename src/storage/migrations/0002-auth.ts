import type { Knex } from "knex";

/** Token issuer state: root tokens (hashed) and the issuer's signing keys. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table root_tokens (
      id text primary key,
      -- SHA-256 of the token; the token itself is shown once and never stored.
      token_hash bytea not null unique,
      subject_did text not null,
      scopes text[] not null,
      description text not null default '',
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    );

    create table issuer_keys (
      kid text primary key,
      public_jwk jsonb not null,
      private_jwk jsonb not null,
      created_at timestamptz not null default now(),
      -- A retired key no longer signs but still verifies until the tokens it signed expire.
      retired_at timestamptz
    );

    -- At most one current (signing) key. Two processes that start on an empty table both try to
    -- create one; this index lets exactly one insert win and the other re-read the winner.
    create unique index issuer_keys_one_current on issuer_keys ((retired_at is null))
      where retired_at is null;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table issuer_keys;
    drop table root_tokens;
  `);
}
