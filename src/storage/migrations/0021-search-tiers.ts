import type { Knex } from "knex";

/**
 * Search in tiers (src/discovery/search-sql.ts): each tier is walked newest first or, when sparse,
 * found through an index, so a page costs the rows it walks, not every match. `entry_search` gains
 * the name's words as one string (the exact-name tier) and the name and the tags as text documents
 * of their own (the name and tag tiers), each with its index, and a B-tree on the sequence.
 */
/** The trigger keeping a search row with its tiers' columns; migration 0024 makes its documents once. */
export const SEARCH_SYNC_IN_TIERS = `    create or replace function registry_search_sync() returns trigger language plpgsql as $$
    begin
      if new.is_latest and new.status in ('active', 'deprecated') then
        insert into entry_search (base_did, sequence, entry_type, name, document, name_words, name_document, tags_document)
          values (new.base_did, new.sequence, new.entry_type, new.name,
                  registry_search_document(new.name, new.tags, new.description),
                  registry_search_words(new.name),
                  registry_search_words_document(registry_search_words(new.name)),
                  registry_search_words_document(registry_search_words(array_to_string(new.tags, ' '))))
          on conflict (base_did) do update set sequence = excluded.sequence, entry_type = excluded.entry_type,
            name = excluded.name, document = excluded.document, name_words = excluded.name_words,
            name_document = excluded.name_document, tags_document = excluded.tags_document;
      else
        delete from entry_search where base_did = new.base_did and sequence = new.sequence;
      end if;
      return null;
    end $$;
`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- The words of a name or of tags as search sees them: lower case, '-_./:' as spaces.
    create function registry_search_words(p_text text) returns text
    language sql immutable parallel safe as $$
      select translate(lower(p_text), '-_./:', '     ')
    $$;

    -- As migration 0020's document: words as written (prefixes) and English stems.
    create function registry_search_words_document(p_words text) returns tsvector
    language sql immutable parallel safe as $$
      select to_tsvector('simple'::regconfig, p_words) || to_tsvector('english'::regconfig, p_words)
    $$;

    -- As migration 0020's, with one term fewer where it can: the stem's prefix alone when the stem
    -- starts the word as written ('summar':* finds all 'summarizer':* does), as each prefix term
    -- costs a GIN index a scan of every indexed word it starts.
    create or replace function registry_search_query(p_words text[]) returns tsquery
    language plpgsql immutable parallel safe as $$
    declare
      word text;
      stem text;
      term tsquery;
      kept tsquery;
      everything tsquery;
    begin
      foreach word in array p_words loop
        term := to_tsquery('simple'::regconfig, word || ':*');
        everything := case when everything is null then term else everything && term end;
        continue when ts_lexize('english_stem', word) = '{}';
        stem := (ts_lexize('english_stem', word))[1];
        term := case when starts_with(word, stem) then to_tsquery('english'::regconfig, word || ':*')
                     else to_tsquery('english'::regconfig, word || ':*') || term end;
        kept := case when kept is null then term else kept && term end;
      end loop;
      return coalesce(kept, everything);
    end $$;

    alter table entry_search add column name_words text, add column name_document tsvector, add column tags_document tsvector;
    update entry_search s
      set name_words = registry_search_words(e.name),
          name_document = registry_search_words_document(registry_search_words(e.name)),
          tags_document = registry_search_words_document(registry_search_words(array_to_string(e.tags, ' ')))
      from entries e where e.sequence = s.sequence;
    alter table entry_search alter column name_words set not null, alter column name_document set not null,
      alter column tags_document set not null;

    create index entry_search_name_words on entry_search (name_words);
    create index entry_search_name_document on entry_search using gin (name_document);
    create index entry_search_tags_document on entry_search using gin (tags_document);
    create index entry_search_sequence on entry_search (sequence);

${SEARCH_SYNC_IN_TIERS}  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function registry_search_sync() returns trigger language plpgsql as $$
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
    create or replace function registry_search_query(p_words text[]) returns tsquery
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
    drop index entry_search_sequence;
    alter table entry_search drop column name_words, drop column name_document, drop column tags_document;
    drop function registry_search_words_document(text);
    drop function registry_search_words(text);
  `);
}
