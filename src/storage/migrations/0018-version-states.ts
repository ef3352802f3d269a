import type { Knex } from "knex";
import { LOG_APPEND_LOCK } from "./0011-log-append-lock.js";
import { CREATE_ENTRY_FROM_RECORD } from "./0016-entry-payload-v2.js";

/**
 * What happens to a version after publishing (docs/lifecycle.md): each mark a publisher or a
 * moderator sets is a column of its own (null when not in place), and `status` is the most severe
 * of them. A trigger derives `status`, `deprecated` and `archived` from the marks on every write,
 * so no write path can leave them disagreeing; src/domain/version-state.ts holds the same
 * precedence, and a test holds the two equal.
 *
 * A lifecycle or moderation request is one log record however many versions it changes: the
 * record keeps the request as signed (`request`) and the changed versions' new states
 * (`entry_states`), and `registry_log_versions` says which versions a record is about, so an
 * entry's proof still finds the last record of its state.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table entries
      add column deprecation jsonb,
      add column yank jsonb,
      add column quarantine jsonb,
      add column removal jsonb,
      add column archive jsonb,
      add column deprecated boolean not null default false,
      add column archived boolean not null default false,
      drop constraint entries_status_check,
      drop constraint entries_revocation_complete,
      add constraint entries_status_known
        check (status in ('active', 'deprecated', 'yanked', 'quarantined', 'revoked', 'removed')),
      add constraint entries_revocation_complete check ((revoked_at is null) = (revocation_reason is null));

    alter table entry_names add column archive jsonb;

    create function registry_entry_status() returns trigger language plpgsql as $$
    begin
      new.status := case
        when new.removal is not null then 'removed'
        when new.revoked_at is not null then 'revoked'
        when new.quarantine is not null then 'quarantined'
        when new.yank is not null then 'yanked'
        when new.deprecation is not null then 'deprecated'
        else 'active' end;
      new.deprecated := new.deprecation is not null;
      new.archived := new.archive is not null;
      return new;
    end $$;
    create trigger entries_status before insert or update on entries
      for each row execute function registry_entry_status();

    -- Latest: active or deprecated, then yanked, then quarantined, then revoked; removed never.
    -- Within a group stable before prerelease, then SemVer precedence.
    create or replace function registry_recompute_latest(p_base_did text) returns void
    language plpgsql as $$
    declare
      best bigint;
    begin
      select sequence into best from entries
        where base_did = p_base_did and status <> 'removed'
        order by case status when 'active' then 0 when 'deprecated' then 0 when 'yanked' then 1
                             when 'quarantined' then 2 else 3 end,
                 is_prerelease asc, version_key desc
        limit 1;
      -- Clear first: the one-latest unique index is checked row by row.
      update entries set is_latest = false
        where base_did = p_base_did and is_latest and sequence is distinct from best;
      update entries set is_latest = true
        where sequence = best and not is_latest;
    end $$;

    alter table registry_log
      alter column entry_state drop not null,
      add column entry_states jsonb,
      add column request jsonb,
      drop constraint registry_log_kind_check,
      add constraint registry_log_kind_known
        check (kind in ('entry.created', 'entry.revoked', 'entry.lifecycle', 'entry.moderation')),
      add constraint registry_log_state_present check ((entry_state is null) <> (entry_states is null)),
      drop column state_bytes,
      add column state_bytes integer generated always as
        (octet_length(coalesce(entry_state, entry_states)::text) + coalesce(octet_length(request::text), 0)) stored;

    create table registry_log_versions (
      entry_did text not null,
      log_index bigint not null references registry_log (log_index),
      primary key (entry_did, log_index)
    );

    -- The last accepted issuedAt of each signed action type on each name: a signature is never
    -- accepted twice, nor one older than the last (docs/lifecycle.md#replay).
    create table signed_action_clock (
      payload_type text not null,
      base_did text not null references entry_names (base_did),
      issued_at timestamptz not null,
      primary key (payload_type, base_did)
    );
  `);
  await knex.raw(createEntryRefusingArchived());
}

/** Migration 0016's create, refusing a new version of an archived name, and keeping a deprecated latest. */
function createEntryRefusingArchived(): string {
  return `
    create or replace function registry_create_entry(p_entry jsonb)
    returns table (assigned_sequence bigint, made_latest boolean)
    language plpgsql as $$
    declare
      fresh entries := jsonb_populate_record(null::entries, p_entry);
      owner text;
      name_archive jsonb;
      kept_latest text;
      created entries;
      new_index bigint;
    begin
      insert into entry_names (base_did, entry_type, name, publisher_did)
        values (fresh.base_did, fresh.entry_type, fresh.name, fresh.publisher_did)
        on conflict (base_did) do update set base_did = excluded.base_did
        returning publisher_did, archive into owner, name_archive;
      if owner <> fresh.publisher_did then
        raise exception 'entry owned by another publisher' using errcode = 'RG403';
      end if;
      if name_archive is not null then
        raise exception 'name archived' using errcode = 'RG412';
      end if;
      -- The current latest, if it stays latest: active or deprecated, and outranking the new version.
      select version into kept_latest from entries
        where base_did = fresh.base_did and is_latest and status in ('active', 'deprecated')
          and (is_prerelease < fresh.is_prerelease
            or (is_prerelease = fresh.is_prerelease and version_key > fresh.version_key collate "C"));
      made_latest := kept_latest is null;
      if made_latest then
        update entries set is_latest = false where base_did = fresh.base_did and is_latest;
      end if;
      -- What the registry assigns; every other column is the publisher's record, as sent.
      fresh.sequence := nextval('entry_sequence');
      fresh.revoked_at := null;
      fresh.revocation_reason := null;
      fresh.deprecation := null;
      fresh.yank := null;
      fresh.quarantine := null;
      fresh.removal := null;
      fresh.archive := null;
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
}

export async function down(knex: Knex): Promise<void> {
  const acted = await knex("registry_log").whereIn("kind", ["entry.lifecycle", "entry.moderation"]).first("log_index");
  if (acted !== undefined) throw new Error("cannot go back before version states: the log holds lifecycle or moderation records");
  await knex.raw(`
    drop table signed_action_clock;
    drop table registry_log_versions;
    alter table registry_log
      drop column state_bytes,
      drop constraint registry_log_state_present,
      drop constraint registry_log_kind_known,
      add constraint registry_log_kind_check check (kind in ('entry.created', 'entry.revoked')),
      drop column request,
      drop column entry_states,
      alter column entry_state set not null,
      add column state_bytes integer generated always as (octet_length(entry_state::text)) stored;
    drop trigger entries_status on entries;
    drop function registry_entry_status();
    alter table entry_names drop column archive;
    alter table entries
      drop constraint entries_revocation_complete,
      drop constraint entries_status_known,
      drop column deprecation, drop column yank, drop column quarantine, drop column removal,
      drop column archive, drop column deprecated, drop column archived,
      add constraint entries_status_check check (status in ('active', 'revoked')),
      add constraint entries_revocation_complete check (
        (status = 'active' and revoked_at is null and revocation_reason is null) or
        (status = 'revoked' and revoked_at is not null and revocation_reason is not null));
  `);
  await knex.raw(`
    create or replace function registry_recompute_latest(p_base_did text) returns void
    language plpgsql as $$
    declare
      best bigint;
    begin
      select sequence into best from entries
        where base_did = p_base_did
        order by (status = 'active') desc, is_prerelease asc, version_key desc
        limit 1;
      update entries set is_latest = false
        where base_did = p_base_did and is_latest and sequence is distinct from best;
      update entries set is_latest = true
        where sequence = best and not is_latest;
    end $$;
  `);
  await knex.raw(CREATE_ENTRY_FROM_RECORD);
}
