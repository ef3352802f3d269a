import type { Knex } from "knex";
import { LOG_APPEND_LOCK } from "./0011-log-append-lock.js";

/**
 * A signed action in two statements instead of a transaction of a dozen (docs/performance.md):
 * registry_action_target reads what the rules need, the service decides in TypeScript, and
 * registry_apply_action writes the decision, refusing it (RG409) when the name changed in
 * between, whereupon the service reads and decides again. Each keeps its plans cached.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- The name's owner and archive, the last accepted issuedAt of the payload type, the name's
    -- newest log record, and the versions addressed (all when p_version_key is null).
    -- PL/pgSQL rather than SQL, so its statements keep their plans from call to call.
    create function registry_action_target(p_base_did text, p_version_key text, p_payload_type text)
    returns jsonb language plpgsql stable as $$
    declare
      target jsonb;
    begin
      select jsonb_build_object('owner', n.publisher_did, 'entryType', n.entry_type, 'archive', n.archive)
        into target from entry_names n where n.base_did = p_base_did;
      if target is null then
        return null;
      end if;
      return target || jsonb_build_object(
        'clock', (select to_jsonb(c.issued_at) from signed_action_clock c
                   where c.payload_type = p_payload_type and c.base_did = p_base_did),
        'head', (select max(l.log_index) from registry_log l where l.base_did = p_base_did),
        'versions', coalesce((select jsonb_agg(to_jsonb(e) order by e.version_key collate "C" desc) from entries e
                               where e.base_did = p_base_did and (p_version_key is null or e.version_key = p_version_key)),
                             '[]'::jsonb));
    end $$;

    -- Where a status stands when latest is chosen (src/domain/version-state.ts, LATEST_GROUPS).
    create function registry_latest_rank(p_status text) returns integer language sql immutable as $$
      select case p_status when 'active' then 0 when 'deprecated' then 0 when 'yanked' then 1
                           when 'quarantined' then 2 when 'revoked' then 3 else 4 end
    $$;

    -- p_action: base_did, version_key (or null), kind, payload_type, issued_at, request, the head
    -- and clock the decision was made on, changes [{sequence, columns}], and archive_changed with
    -- archive. Returns the addressed versions after the action.
    create function registry_apply_action(p_action jsonb) returns jsonb language plpgsql as $$
    declare
      name_did text := p_action->>'base_did';
      version_key_of text := p_action->>'version_key';
      payload text := p_action->>'payload_type';
      changed bigint[];
      latest_moves boolean;
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
      -- Each change names only the columns it sets; the others keep the row's values. A lifted
      -- mark arrives as JSON null, which jsonb keeps as a value: nullif makes it SQL NULL.
      with updated as (
        update entries e
           set (deprecation, yank, quarantine, removal, description, tags, data, homepage, repository, license) =
               (select nullif(r.deprecation, 'null'), nullif(r.yank, 'null'), nullif(r.quarantine, 'null'),
                       nullif(r.removal, 'null'), r.description, r.tags, r.data, r.homepage, r.repository, r.license
                  from jsonb_populate_record(e, c.columns) r)
          from jsonb_to_recordset(p_action->'changes') as c(sequence bigint, columns jsonb), entries before
         where e.sequence = c.sequence and before.sequence = c.sequence
        -- "before" is read in the statement's snapshot: the row as it was.
        returning e.sequence, registry_latest_rank(before.status) <> registry_latest_rank(e.status) as reranked)
      select coalesce(array_agg(u.sequence), '{}'), coalesce(bool_or(u.reranked), false) into changed, latest_moves from updated u;
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
        select jsonb_agg(to_jsonb(e) order by e.sequence), array_agg(distinct e.entry_did)
          into states, dids from entries e where e.sequence = any(changed);
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
    end $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    "drop function registry_apply_action(jsonb); drop function registry_action_target(text, text, text); drop function registry_latest_rank(text)",
  );
}
