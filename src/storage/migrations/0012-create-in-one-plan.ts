import type { Knex } from "knex";
import { CREATE_ENTRY_WITH_LOG } from "./0008-change-log.js";
import { CREATE_ENTRY_SIGNATURE } from "./0010-create-plans.js";
import { LOG_APPEND_LOCK } from "./0011-log-append-lock.js";

/**
 * A create whose statements keep their cached plans. Migration 0010 made the write functions plan
 * every statement on every call, because one statement's generic plan went wrong: the version
 * check `base_did = $1 and version_key = $2`, planned on a nearly empty table, ties between the
 * unique (base_did, version_key) index and the (version_key, sequence) discovery index. Cached with
 * the second, each create walked every entry sharing its version, slower as the table grew. The
 * cure cost more than the disease: planning the create's eight statements on every call is a large
 * share of its database time (docs/performance.md#creates).
 *
 * Each statement left here has one sensible plan, whatever the table's size:
 * - the version check is gone: the unique constraint `entries_version_once` refuses a second
 *   publish of a version by itself (mapped to already_exists by its name), and the whole call is
 *   undone with it;
 * - the latest version is read once, through the unique partial index on (base_did) where
 *   is_latest, which answers both whether the new version outranks it and what the log record
 *   names as latest;
 * - the log record is built from the row the insert returns, not read back by sequence, and is
 *   appended inline rather than through `registry_log_append` (which revocations still use).
 *
 * The append keeps migration 0011's rule: a transaction-scoped lock from taking the index to
 * commit, so indexes stay gapless and in commit order.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function registry_create_entry(
      p_base_did text, p_entry_did text, p_entry_type text, p_name text, p_version text,
      p_version_key text, p_is_prerelease boolean, p_publisher_did text, p_published_at timestamptz,
      p_description text, p_tags text[], p_data jsonb, p_content_hash text, p_bond_amount text,
      p_bond_value numeric, p_bond_unit text, p_signature text
    ) returns table (assigned_sequence bigint, made_latest boolean)
    language plpgsql as $$
    declare
      owner text;
      kept_latest text;
      created entries;
      new_index bigint;
    begin
      insert into entry_names (base_did, entry_type, name, publisher_did)
        values (p_base_did, p_entry_type, p_name, p_publisher_did)
        on conflict (base_did) do update set base_did = excluded.base_did
        returning publisher_did into owner;
      if owner <> p_publisher_did then
        raise exception 'entry owned by another publisher' using errcode = 'RG403';
      end if;
      -- The current latest, if it stays latest: active and outranking the new version.
      select version into kept_latest from entries
        where base_did = p_base_did and is_latest and status = 'active'
          and (is_prerelease < p_is_prerelease
            or (is_prerelease = p_is_prerelease and version_key > p_version_key collate "C"));
      made_latest := kept_latest is null;
      if made_latest then
        update entries set is_latest = false where base_did = p_base_did and is_latest;
      end if;
      insert into entries (
        sequence, base_did, entry_did, entry_type, name, version, version_key, is_prerelease,
        publisher_did, published_at, description, tags, data, content_hash, bond_amount,
        bond_value, bond_unit, signature, status, is_latest
      ) values (
        nextval('entry_sequence'), p_base_did, p_entry_did, p_entry_type, p_name, p_version,
        p_version_key, p_is_prerelease, p_publisher_did, p_published_at, p_description, p_tags,
        p_data, p_content_hash, p_bond_amount, p_bond_value, p_bond_unit, p_signature, 'active',
        made_latest
      ) returning * into created;
      perform pg_advisory_xact_lock(${LOG_APPEND_LOCK});
      select coalesce(max(log_index), -1) + 1 into new_index from registry_log;
      insert into registry_log (log_index, kind, base_did, entry_state, latest_version)
        values (new_index, 'entry.created', p_base_did, to_jsonb(created), coalesce(kept_latest, p_version));
      perform pg_notify('registry_entry_changes', p_base_did);
      assigned_sequence := created.sequence;
      return next;
    end $$;
  `);
}

/** Back to migration 0008's function, planned per call as migration 0010 set it. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(CREATE_ENTRY_WITH_LOG);
  await knex.raw(`alter function ${CREATE_ENTRY_SIGNATURE} set plan_cache_mode = force_custom_plan`);
}
