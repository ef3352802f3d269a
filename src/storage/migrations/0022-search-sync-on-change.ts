import type { Knex } from "knex";

/**
 * `entry_search` holds the latest version of each name while it is active or deprecated
 * (migration 0020). Its update trigger fired on every status change, so deprecating a latest
 * version, or lifting that, rebuilt the row's four text documents and their index entries for a
 * row that stays exactly as it was. It now fires only when the row would change: the version
 * enters or leaves what search shows, or its name, tags or description change.
 */
const SEARCHABLE = (row: "old" | "new") => `(${row}.is_latest and ${row}.status in ('active', 'deprecated'))`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger entries_search_update on entries;
    create trigger entries_search_update after update on entries
      for each row when (${SEARCHABLE("old")} is distinct from ${SEARCHABLE("new")}
        or old.name is distinct from new.name or old.tags is distinct from new.tags
        or old.description is distinct from new.description)
      execute function registry_search_sync();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger entries_search_update on entries;
    create trigger entries_search_update after update on entries
      for each row when (old.is_latest is distinct from new.is_latest or old.status is distinct from new.status
        or old.name is distinct from new.name or old.tags is distinct from new.tags
        or old.description is distinct from new.description)
      execute function registry_search_sync();
  `);
}
