import type { Knex } from "knex";

/**
 * Log indexes without a hot counter row. Migration 0008 counted in one row of registry_log_head,
 * updated by every write: each update leaves a dead version of that row behind, and at hundreds of
 * writes a second the row's chain of versions grows faster than it is pruned, so every write took
 * longer than the last. Now the writer holds a transaction-scoped advisory lock from the moment it
 * takes its index to its commit, and the index is the log's largest plus one (a backward look at the
 * primary key). The guarantee is the same: indexes are assigned in commit order, with no holes,
 * because the lock is released only once the transaction's insert is visible to everyone.
 */
export const LOG_APPEND_LOCK = 7_302_004_817;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function registry_log_append(p_kind text, p_sequence bigint, p_revocation_did text,
                                                   p_reason text, p_signature text, p_signer text)
    returns bigint language plpgsql set plan_cache_mode = force_custom_plan as $$
    declare
      new_index bigint;
    begin
      perform pg_advisory_xact_lock(${LOG_APPEND_LOCK});
      select coalesce(max(log_index), -1) + 1 into new_index from registry_log;
      insert into registry_log (log_index, kind, base_did, entry_state, latest_version, revocation_did,
                                revocation_reason, revocation_signature, revocation_signer)
      select new_index, p_kind, e.base_did, to_jsonb(e),
             coalesce((select l.version from entries l where l.base_did = e.base_did and l.is_latest), ''),
             p_revocation_did, p_reason, p_signature, p_signer
        from entries e where e.sequence = p_sequence;
      return new_index;
    end $$;
    drop table registry_log_head;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create table registry_log_head (
      only_row boolean primary key default true check (only_row),
      size bigint not null
    );
    insert into registry_log_head (size) select count(*) from registry_log;
    create or replace function registry_log_append(p_kind text, p_sequence bigint, p_revocation_did text,
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
}
