import type { Knex } from "knex";
import { SEARCH_DOCUMENT_FUNCTION } from "./0020-search.js";
import { SEARCH_SYNC_IN_TIERS } from "./0021-search-tiers.js";

/**
 * A search row's documents, each made once per write. The trigger made the whole-text document
 * with registry_search_document, which turned the name and the tags into text search vectors
 * again beside the name and tag documents it had just made, and, being a SQL function too complex
 * to inline, was planned at every create. The document is now those two, weighted, and the
 * description's: the same vector, so no row needs rebuilding.
 */
const SYNC_ONCE = `
    create or replace function registry_search_sync() returns trigger language plpgsql as $$
    declare
      words_of_name text;
      name_vector tsvector;
      tags_vector tsvector;
    begin
      if new.is_latest and new.status in ('active', 'deprecated') then
        words_of_name := registry_search_words(new.name);
        name_vector := registry_search_words_document(words_of_name);
        tags_vector := registry_search_words_document(registry_search_words(array_to_string(new.tags, ' ')));
        insert into entry_search (base_did, sequence, entry_type, name, document, name_words, name_document, tags_document)
          values (new.base_did, new.sequence, new.entry_type, new.name,
                  setweight(name_vector, 'A') || setweight(tags_vector, 'B')
                    || setweight(to_tsvector('english'::regconfig, new.description), 'C'),
                  words_of_name, name_vector, tags_vector)
          on conflict (base_did) do update set sequence = excluded.sequence, entry_type = excluded.entry_type,
            name = excluded.name, document = excluded.document, name_words = excluded.name_words,
            name_document = excluded.name_document, tags_document = excluded.tags_document;
      else
        delete from entry_search where base_did = new.base_did and sequence = new.sequence;
      end if;
      return null;
    end $$;
    drop function registry_search_document(text, text[], text);`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(SYNC_ONCE);
}

export async function down(knex: Knex): Promise<void> {
  // Migration 0020's document function, then 0021's trigger that calls it.
  await knex.raw(SEARCH_DOCUMENT_FUNCTION + SEARCH_SYNC_IN_TIERS);
}
