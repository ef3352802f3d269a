import type { Knex } from "knex";

/**
 * The create transaction as one server-side function, so a publish is one round trip instead of
 * nine. Each statement in a (volatile) PL/pgSQL function takes a fresh snapshot under READ
 * COMMITTED, so after the name-row lock is granted the function sees every version committed by
 * the transaction it waited for, exactly as the same statements sent one by one would.
 *
 * The latest rule lives only in registry_recompute_latest, which revocation calls too.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function registry_recompute_latest(p_base_did text) returns void
    language plpgsql as $$
    declare
      best bigint;
    begin
      -- Latest: active before revoked, stable before prerelease, then SemVer precedence.
      select sequence into best from entries
        where base_did = p_base_did
        order by (status = 'active') desc, is_prerelease asc, version_key desc
        limit 1;
      -- Clear first: the one-latest unique index is checked row by row.
      update entries set is_latest = false
        where base_did = p_base_did and is_latest and sequence is distinct from best;
      update entries set is_latest = true
        where sequence = best and not is_latest;
    end $$;

    create function registry_create_entry(
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
      -- Creates the name row on first publish, or locks it: creates of one entry run one at a time.
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
      -- A new version is active, so it is latest unless the current latest is an active version
      -- that ranks at least as high (stable before prerelease, then precedence). Deciding before
      -- the insert writes the new row once, instead of inserting and then updating it.
      select not exists (
        select 1 from entries
          where base_did = p_base_did and is_latest and status = 'active'
            and (is_prerelease < p_is_prerelease
              or (is_prerelease = p_is_prerelease and version_key > p_version_key collate "C"))
      ) into outranks_latest;
      if outranks_latest then
        update entries set is_latest = false where base_did = p_base_did and is_latest;
      end if;
      -- Drawn under the lock, so one entry's versions get increasing sequences in commit order.
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
      perform pg_notify('registry_entry_changes', p_base_did);
      -- Only what the registry assigned: the caller has every other value already.
      return query select new_sequence, outranks_latest;
    end $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop function registry_create_entry;
    drop function registry_recompute_latest;
  `);
}
