import type { Knex } from "knex";

/**
 * Ranked search (GET /v1/search, docs/search.md): a weighted text document of each latest version
 * (name A, tags B, description C) and the query built from the searched words, both as functions so
 * the index and every search compute them alike.
 *
 * Names and tags are indexed twice: under 'simple' (the words as written, so a prefix of any word
 * matches) and under 'english' (stems, so "summarizers" finds "summarizer"); descriptions under
 * 'english' only. '-', '_', '.', '/' and ':' split a name into words, so "pdf summariser" reaches
 * `pdf-summarizer`. Only latest versions are searched, so the index holds them alone. Misspelt
 * names go through pg_trgm's index on names (migration 0004).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create extension if not exists pg_trgm;

    -- Built-ins only: an index build resolves names with a search_path of pg_catalog alone.
    -- Immutable: array_to_string is only stable in general, but on text[] it depends on nothing else.
    create function registry_search_document(p_name text, p_tags text[], p_description text) returns tsvector
    language sql immutable parallel safe as $$
      select setweight(to_tsvector('simple'::regconfig, names) || to_tsvector('english'::regconfig, names), 'A')
          || setweight(to_tsvector('simple'::regconfig, tags) || to_tsvector('english'::regconfig, tags), 'B')
          || setweight(to_tsvector('english'::regconfig, p_description), 'C')
      from (select translate(lower(p_name), '-_./:', '     ') as names,
                   translate(lower(array_to_string(p_tags, ' ')), '-_./:', '     ') as tags) words
    $$;

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

    create index entries_search_document on entries
      using gin (registry_search_document(name, tags, description)) where is_latest;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop index entries_search_document;
    drop function registry_search_query(text[]);
    drop function registry_search_document(text, text[], text);
  `);
}
