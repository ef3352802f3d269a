import type { Knex } from "knex";

/**
 * Ranked search (GET /v1/search, docs/api.md#search). `entry_search` holds what search may show,
 * the latest version of each name while it is active or deprecated, with its weighted text
 * document (name A, tags B, description C) stored, so neither matching nor ranking recomputes it.
 * A trigger on `entries` keeps it in step in the same transaction as every write, whatever path
 * made it (create, lifecycle, moderation, revoke, mirror).
 *
 * Names and tags are indexed twice: under 'simple' (the words as written, so a prefix of any word
 * matches) and under 'english' (stems, so "summarizers" finds "summarizer"); descriptions under
 * 'english' only. '-', '_', '.', '/' and ':' split a name into words, so "pdf summariser" reaches
 * `pdf-summarizer`. Misspelt names go through a trigram index on the table's names.
 */
/** The whole-text document of a search row; migration 0024 makes it in the trigger instead. */
export const SEARCH_DOCUMENT_FUNCTION = `    -- Immutable: array_to_string is only stable in general, but on text[] it depends on nothing else.
    create function registry_search_document(p_name text, p_tags text[], p_description text) returns tsvector
    language sql immutable parallel safe as $$
      select setweight(to_tsvector('simple'::regconfig, names) || to_tsvector('english'::regconfig, names), 'A')
          || setweight(to_tsvector('simple'::regconfig, tags) || to_tsvector('english'::regconfig, tags), 'B')
          || setweight(to_tsvector('english'::regconfig, p_description), 'C')
      from (select translate(lower(p_name), '-_./:', '     ') as names,
                   translate(lower(array_to_string(p_tags, ' ')), '-_./:', '     ') as tags) words
    $$;
`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create extension if not exists pg_trgm;

${SEARCH_DOCUMENT_FUNCTION}
    -- Every word must match, each by its English stem or as a prefix of a word as written. English
    -- stop words are left out (no description keeps them), unless the query has nothing else.
    -- The caller passes words of letters and digits only, so none can be tsquery syntax.
    create function registry_search_query(p_words text[]) returns tsquery
    language plpgsql immutable parallel safe as $$
    declare
      word text;
      term tsquery;
      kept tsquery;
      everything tsquery;
    begin
      foreach word in array p_words loop
        term := to_tsquery('simple'::regconfig, word || ':*');
        everything := case when everything is null then term else everything && term end;
        continue when ts_lexize('english_stem', word) = '{}';
        term := to_tsquery('english'::regconfig, word || ':*') || term;
        kept := case when kept is null then term else kept && term end;
      end loop;
      return coalesce(kept, everything);
    end $$;

    create table entry_search (
      base_did text primary key,
      sequence bigint not null,
      entry_type text not null,
      name text not null,
      document tsvector not null
    );
    create index entry_search_document on entry_search using gin (document);
    create index entry_search_name_trigram on entry_search using gin (name gin_trgm_ops);

    create function registry_search_sync() returns trigger language plpgsql as $$
    begin
      if new.is_latest and new.status in ('active', 'deprecated') then
        insert into entry_search (base_did, sequence, entry_type, name, document)
          values (new.base_did, new.sequence, new.entry_type, new.name,
                  registry_search_document(new.name, new.tags, new.description))
          on conflict (base_did) do update set sequence = excluded.sequence, entry_type = excluded.entry_type,
            name = excluded.name, document = excluded.document;
      else
        delete from entry_search where base_did = new.base_did and sequence = new.sequence;
      end if;
      return null;
    end $$;
    -- A WHEN, not "update of": status changes through the BEFORE trigger of migration 0018, from
    -- marks the statement sets, and "update of" sees only the statement's own columns.
    create trigger entries_search_insert after insert on entries
      for each row execute function registry_search_sync();
    create trigger entries_search_update after update on entries
      for each row when (old.is_latest is distinct from new.is_latest or old.status is distinct from new.status
        or old.name is distinct from new.name or old.tags is distinct from new.tags
        or old.description is distinct from new.description)
      execute function registry_search_sync();

    insert into entry_search (base_did, sequence, entry_type, name, document)
      select base_did, sequence, entry_type, name, registry_search_document(name, tags, description)
      from entries where is_latest and status in ('active', 'deprecated');
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger entries_search_update on entries;
    drop trigger entries_search_insert on entries;
    drop function registry_search_sync();
    drop table entry_search;
    drop function registry_search_query(text[]);
    drop function registry_search_document(text, text[], text);
  `);
}
