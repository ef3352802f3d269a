import type { Knex } from "knex";
import { CREATE_ENTRY_SIGNATURE } from "./0010-create-plans.js";
import { up as createInOnePlan } from "./0012-create-in-one-plan.js";
import { LOG_APPEND_LOCK } from "./0011-log-append-lock.js";

/**
 * Payload v2 (docs/signatures.md): each entry records the payload its signature covers, and the
 * three optional fields v2 added. Rows written before keep what they were signed as: v1, with the
 * new fields empty, which is what the column defaults say (adding a column with a constant default
 * rewrites no row).
 *
 * registry_create_entry now takes the new row as one jsonb record, named by column, rather than a
 * positional list: a field added later is a column and a catalogue row, and this function does
 * not change. Its statements are migration 0012's, each with one plan whatever the table's size.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table entries
      add column payload_type text not null default 'registry.entry.v1'
        check (payload_type in ('registry.entry.v1', 'registry.entry.v2')),
      add column homepage text not null default '',
      add column repository text not null default '',
      add column license text not null default ''
  `);
  await knex.raw(`drop function ${CREATE_ENTRY_SIGNATURE}`);
  await knex.raw(CREATE_ENTRY_FROM_RECORD);
}

/** The create as this migration defines it; migration 0018 goes back to it. */
export const CREATE_ENTRY_FROM_RECORD = `
    create or replace function registry_create_entry(p_entry jsonb)
    returns table (assigned_sequence bigint, made_latest boolean)
    language plpgsql as $$
    declare
      fresh entries := jsonb_populate_record(null::entries, p_entry);
      owner text;
      kept_latest text;
      created entries;
      new_index bigint;
    begin
      insert into entry_names (base_did, entry_type, name, publisher_did)
        values (fresh.base_did, fresh.entry_type, fresh.name, fresh.publisher_did)
        on conflict (base_did) do update set base_did = excluded.base_did
        returning publisher_did into owner;
      if owner <> fresh.publisher_did then
        raise exception 'entry owned by another publisher' using errcode = 'RG403';
      end if;
      -- The current latest, if it stays latest: active and outranking the new version.
      select version into kept_latest from entries
        where base_did = fresh.base_did and is_latest and status = 'active'
          and (is_prerelease < fresh.is_prerelease
            or (is_prerelease = fresh.is_prerelease and version_key > fresh.version_key collate "C"));
      made_latest := kept_latest is null;
      if made_latest then
        update entries set is_latest = false where base_did = fresh.base_did and is_latest;
      end if;
      -- What the registry assigns; every other column is the publisher's record, as sent.
      fresh.sequence := nextval('entry_sequence');
      fresh.status := 'active';
      fresh.revoked_at := null;
      fresh.revocation_reason := null;
      fresh.is_latest := made_latest;
      fresh.created_at := now();
      insert into entries select fresh.* returning * into created;
      perform pg_advisory_xact_lock(${LOG_APPEND_LOCK});
      select coalesce(max(log_index), -1) + 1 into new_index from registry_log;
      insert into registry_log (log_index, kind, base_did, entry_state, latest_version)
        values (new_index, 'entry.created', fresh.base_did, to_jsonb(created), coalesce(kept_latest, fresh.version));
      perform pg_notify('registry_entry_changes', fresh.base_did);
      assigned_sequence := created.sequence;
      return next;
    end $$;
`;

/** Back to migration 0012's function and the v1-only table; refused once an entry was signed as v2. */
export async function down(knex: Knex): Promise<void> {
  const signedAsV2 = await knex("entries").whereNot({ payload_type: "registry.entry.v1" }).first("entry_did");
  if (signedAsV2 !== undefined) {
    throw new Error(`cannot go back before payload v2: ${signedAsV2.entry_did} is signed as registry.entry.v2, and v1 has no place for it`);
  }
  await knex.raw("drop function registry_create_entry(jsonb)");
  await knex.raw(`
    alter table entries
      drop column payload_type,
      drop column homepage,
      drop column repository,
      drop column license
  `);
  await createInOnePlan(knex);
}
