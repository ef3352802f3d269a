import type { Knex } from "knex";

/**
 * The change log (docs/feed.md): every state change of an entry at a gapless index.
 *
 * Indexes come from one counter row, `registry_log_head`, incremented inside the writing
 * transaction. Its row lock is held until commit, so indexes are assigned in commit order: when a
 * reader sees index N, every index below N is committed too, and a follower that reads "after its
 * last index" can neither skip nor repeat a change. A sequence could not promise that: a
 * rolled-back transaction leaves a hole, and a later number can commit first. The lock is taken
 * last in each write, so writes of different entries still run side by side until they commit.
 *
 * Each record keeps the entry's row as it was right after the change (`entry_state`), since the
 * row itself changes later (a revocation rewrites it).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table registry_log (
      log_index bigint primary key,
      kind text not null check (kind in ('entry.created', 'entry.revoked')),
      base_did text not null,
      entry_state jsonb not null,
      latest_version text not null,
      revocation_did text,
      revocation_reason text,
      revocation_signature text,
      revocation_signer text,
      logged_at timestamptz not null default clock_timestamp()
    );

    create table registry_log_head (
      only_row boolean primary key default true check (only_row),
      size bigint not null
    );

    -- The history before the log existed, reconstructed: each entry's creation in sequence order
    -- (as it was stored then: active, not latest unless it still is), then each revocation in
    -- the order of its time, without the revocation's signature, which was not kept.
    insert into registry_log (log_index, kind, base_did, entry_state, latest_version, logged_at)
    select row_number() over (order by e.sequence) - 1, 'entry.created', e.base_did,
           to_jsonb(e) || jsonb_build_object('status', 'active', 'revoked_at', null, 'revocation_reason', null,
                                             'is_latest', e.is_latest and e.status = 'active'),
           coalesce((select l.version from entries l where l.base_did = e.base_did and l.is_latest), ''),
           e.published_at
      from entries e;
    insert into registry_log (log_index, kind, base_did, entry_state, latest_version, revocation_did,
                              revocation_reason, revocation_signature, revocation_signer, logged_at)
    select (select count(*) from entries) + row_number() over (order by e.revoked_at, e.sequence) - 1,
           'entry.revoked', e.base_did, to_jsonb(e),
           coalesce((select l.version from entries l where l.base_did = e.base_did and l.is_latest), ''),
           e.entry_did, e.revocation_reason, '', '', e.revoked_at
      from entries e where e.status = 'revoked';
    insert into registry_log_head (size) select count(*) from registry_log;

    -- Appends the entry's current row as the next record. Called last in a write's transaction.
    create function registry_log_append(p_kind text, p_sequence bigint, p_revocation_did text,
                                        p_reason text, p_signature text, p_signer text)
    returns bigint language plpgsql as $$
    declare
      new_index bigint;
    begin
      update registry_log_head set size = size + 1 returning size - 1 into new_index;
      insert into registry_log (log_index, kind, base_did, entry_state, latest_version, revocation_did,
                                revocation_reason, revocation_signature, revocation_signer)
      select new_index, p_kind, e.base_did, to_jsonb(e),
             coalesce((select l.version from entries l where l.base_did = e.base_did and l.is_latest), ''),
             p_revocation_did, p_reason, p_signature, p_signer
        from entries e where e.sequence = p_sequence;
      return new_index;
    end $$;
  `);
  await knex.raw(CREATE_ENTRY_WITH_LOG);
}

/** registry_create_entry of migration 0003, appending its record to the log before it notifies. */
export const CREATE_ENTRY_WITH_LOG = `
  create or replace function registry_create_entry(
    p_base_did text, p_entry_did text, p_entry_type text, p_name text, p_version text,
    p_version_key text, p_is_prerelease boolean, p_publisher_did text, p_published_at timestamptz,
    p_description text, p_tags text[], p_data jsonb, p_content_hash text, p_bond_amount text,
    p_bond_value numeric, p_bond_unit text, p_signature text
  ) returns table (assigned_sequence bigint, made_latest boolean)
  language plpgsql as $$
  declare
    owner text;
    new_sequence bigint;
    outranks_latest boolean;
  begin
    insert into entry_names (base_did, entry_type, name, publisher_did)
      values (p_base_did, p_entry_type, p_name, p_publisher_did)
      on conflict (base_did) do update set base_did = excluded.base_did
      returning publisher_did into owner;
    if owner <> p_publisher_did then
      raise exception 'entry owned by another publisher' using errcode = 'RG403';
    end if;
    if exists (select 1 from entries where base_did = p_base_did and version_key = p_version_key) then
      raise exception 'version already published' using errcode = 'RG409';
    end if;
    select not exists (
      select 1 from entries
        where base_did = p_base_did and is_latest and status = 'active'
          and (is_prerelease < p_is_prerelease
            or (is_prerelease = p_is_prerelease and version_key > p_version_key collate "C"))
    ) into outranks_latest;
    if outranks_latest then
      update entries set is_latest = false where base_did = p_base_did and is_latest;
    end if;
    new_sequence := nextval('entry_sequence');
    insert into entries (
      sequence, base_did, entry_did, entry_type, name, version, version_key, is_prerelease,
      publisher_did, published_at, description, tags, data, content_hash, bond_amount,
      bond_value, bond_unit, signature, status, is_latest
    ) values (
      new_sequence, p_base_did, p_entry_did, p_entry_type, p_name, p_version, p_version_key,
      p_is_prerelease, p_publisher_did, p_published_at, p_description, p_tags, p_data,
      p_content_hash, p_bond_amount, p_bond_value, p_bond_unit, p_signature, 'active',
      outranks_latest
    );
    perform registry_log_append('entry.created', new_sequence, null, null, null, null);
    perform pg_notify('registry_entry_changes', p_base_did);
    return query select new_sequence, outranks_latest;
  end $$;
`;

export async function down(knex: Knex): Promise<void> {
  const { up: createEntryFunction } = await import("./0003-create-entry-function.js");
  await knex.raw(`
    drop function registry_create_entry;
    drop function registry_recompute_latest;
    drop function registry_log_append;
    drop table registry_log_head;
    drop table registry_log;
  `);
  await createEntryFunction(knex);
}
