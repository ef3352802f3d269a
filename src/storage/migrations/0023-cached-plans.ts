import type { Knex } from "knex";
import { LOG_APPEND_LOCK } from "./0011-log-append-lock.js";

/**
 * registry_apply_action (migration 0019) updated its versions in one statement joined to the
 * changes' jsonb_to_recordset, which the planner guesses at 100 rows: it hashed them and scanned
 * every entry, so each lifecycle or moderation action cost time in proportion to the registry's
 * size. Each change now updates, and then reads, its row by primary key: those plans hold
 * whatever the table's size when they were cached. Otherwise the function is unchanged.
 *
 * And two statements were planned afresh on every call: PL/pgSQL's plan cache judged custom plans
 * cheaper than the generic one for the action's read (whose planning cost more than its
 * execution) and for the answer's versions. Their generic plans are index lookups, so they are kept.
 */
// A later `create or replace` of either resets this; test/storage/write-plans.test.ts then fails.
const GENERIC_PLANS = ["registry_action_target(text, text, text)", "registry_apply_action(jsonb)"];

const APPLY_ACTION = (updateVersions: string, readStates: string) => `
    create or replace function registry_apply_action(p_action jsonb) returns jsonb language plpgsql as $$
    declare
      name_did text := p_action->>'base_did';
      version_key_of text := p_action->>'version_key';
      payload text := p_action->>'payload_type';
      changed bigint[] := '{}';
      latest_moves boolean := false;
      change record;
      reranked boolean;
      key bigint;
      state jsonb;
      state_list jsonb[];
      did text;
      states jsonb;
      dids text[];
      latest text;
      new_index bigint;
      after jsonb;
    begin
      perform 1 from entry_names where base_did = name_did for update;
      if (select max(log_index) from registry_log where base_did = name_did) is distinct from (p_action->>'head')::bigint
         or (select issued_at from signed_action_clock where payload_type = payload and base_did = name_did)
            is distinct from (p_action->>'clock')::timestamptz then
        raise exception 'the name changed while the action was decided' using errcode = 'RG409';
      end if;
      insert into signed_action_clock (payload_type, base_did, issued_at)
        values (payload, name_did, (p_action->>'issued_at')::timestamptz)
        on conflict (payload_type, base_did) do update set issued_at = excluded.issued_at;
      ${updateVersions}
      if (p_action->>'archive_changed')::boolean then
        update entry_names set archive = nullif(p_action->'archive', 'null') where base_did = name_did;
        with archived as (
          update entries set archive = nullif(p_action->'archive', 'null') where base_did = name_did returning sequence)
        select changed || coalesce(array_agg(sequence), '{}') into changed from archived;
      end if;
      -- Everything the record holds is read before the log's lock, which every write serialises
      -- on: the lock is held only to take the next index and insert.
      if cardinality(changed) > 0 then
        -- Deprecating, or lifting it, moves no version between latest's groups: nothing to recompute.
        if latest_moves then
          perform registry_recompute_latest(name_did);
        end if;
${readStates}
        select coalesce((select l.version from entries l where l.base_did = name_did and l.is_latest), '') into latest;
      end if;
      select coalesce(jsonb_agg(to_jsonb(e) order by e.version_key collate "C" desc), '[]'::jsonb) into after
        from entries e where e.base_did = name_did and (version_key_of is null or e.version_key = version_key_of);
      if cardinality(changed) > 0 then
        perform pg_advisory_xact_lock(${LOG_APPEND_LOCK});
        select coalesce(max(log_index), -1) + 1 into new_index from registry_log;
        insert into registry_log (log_index, kind, base_did, entry_states, request, latest_version)
          values (new_index, p_action->>'kind', name_did, states, p_action->'request', latest);
        insert into registry_log_versions (entry_did, log_index) select unnest(dids), new_index;
        perform pg_notify('registry_entry_changes', name_did);
      end if;
      return after;
    end $$;`;

/**
 * Each change names only the columns it sets; the others keep the row's values. A lifted mark
 * arrives as JSON null, which jsonb keeps as a value: nullif makes it SQL NULL. "before" is the
 * row as the statement's snapshot saw it, for whether latest's group changed.
 */
const UPDATE_BY_KEY = `
      for change in select c.sequence, c.columns from jsonb_to_recordset(p_action->'changes') as c(sequence bigint, columns jsonb) loop
        update entries e
           set (deprecation, yank, quarantine, removal, description, tags, data, homepage, repository, license) =
               (select nullif(r.deprecation, 'null'), nullif(r.yank, 'null'), nullif(r.quarantine, 'null'),
                       nullif(r.removal, 'null'), r.description, r.tags, r.data, r.homepage, r.repository, r.license
                  from jsonb_populate_record(e, change.columns) r)
          from entries before
         where e.sequence = change.sequence and before.sequence = change.sequence
        returning registry_latest_rank(before.status) <> registry_latest_rank(e.status) into reranked;
        if found then
          changed := changed || change.sequence;
          latest_moves := latest_moves or reranked;
        end if;
      end loop;`;

/**
 * The changed versions' states for the record, in sequence order, each read by its key: a plan
 * for `sequence = any(changed)` cached while the table was small scans it for good. Gathered in
 * arrays, which PL/pgSQL grows in place; a jsonb concatenation would copy all so far each time.
 */
const STATES_BY_KEY = `
        state_list := '{}';
        dids := '{}';
        foreach key in array (select array_agg(distinct k order by k) from unnest(changed) k) loop
          select to_jsonb(e), e.entry_did into state, did from entries e where e.sequence = key;
          state_list := state_list || state;
          dids := dids || did;
        end loop;
        states := to_jsonb(state_list);`;

const STATES_BY_ANY = `
        select jsonb_agg(to_jsonb(e) order by e.sequence), array_agg(distinct e.entry_did)
          into states, dids from entries e where e.sequence = any(changed);`;

/** Migration 0019's statement, for going back. */
const UPDATE_JOINED = `
      with updated as (
        update entries e
           set (deprecation, yank, quarantine, removal, description, tags, data, homepage, repository, license) =
               (select nullif(r.deprecation, 'null'), nullif(r.yank, 'null'), nullif(r.quarantine, 'null'),
                       nullif(r.removal, 'null'), r.description, r.tags, r.data, r.homepage, r.repository, r.license
                  from jsonb_populate_record(e, c.columns) r)
          from jsonb_to_recordset(p_action->'changes') as c(sequence bigint, columns jsonb), entries before
         where e.sequence = c.sequence and before.sequence = c.sequence
        returning e.sequence, registry_latest_rank(before.status) <> registry_latest_rank(e.status) as reranked)
      select coalesce(array_agg(u.sequence), '{}'), coalesce(bool_or(u.reranked), false) into changed, latest_moves from updated u;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(APPLY_ACTION(UPDATE_BY_KEY, STATES_BY_KEY));
  for (const signature of GENERIC_PLANS) await knex.raw(`alter function ${signature} set plan_cache_mode = force_generic_plan`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(APPLY_ACTION(UPDATE_JOINED, STATES_BY_ANY));
  for (const signature of GENERIC_PLANS) await knex.raw(`alter function ${signature} reset plan_cache_mode`);
}
