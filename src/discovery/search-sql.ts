/**
 * Compiles a search (search-query.ts) into one SELECT for knex. Every value from the request is a
 * `?` binding; the words reach SQL as one space-separated string, split again by the database.
 *
 * A match is a latest version, active or deprecated (the rows of `entry_search`), whose text
 * document (migration 0020: name A, tags B, description C) has every word by stem or prefix, or
 * whose name is a near spelling of the searched text (pg_trgm's word similarity). The score adds
 * the document's cover-density rank (weights: name 1, tags 0.4, description 0.1) to the name's
 * trigram similarity, so the exact name comes first, a name match beats a tag match beats a
 * description match, and a misspelt name still ranks by how close it is. Ties go to the name,
 * then the entry DID (unique among latest versions), in code-point order: a total order, so a
 * keyset cursor neither repeats nor skips.
 */
import type { SqlFragment } from "./discovery-sql.js";
import type { SearchQuery } from "./search-repository.js";

/** The position a cursor carries: the score as Postgres prints a float8 (exact), the name, the DID. */
export type SearchPosition = readonly [score: string, name: string, baseDid: string];

export const SCORE_ALIAS = "_search_score";

/**
 * How close a name must be to the searched text (pg_trgm word similarity, 0 to 1) to be found by
 * spelling alone: 0.5 finds one dropped, doubled or swapped letter in a word of seven or more
 * (pg_trgm's default, 0.6, misses "lantren" for "lantern"). Set for each search, so the server's
 * own setting does not change answers.
 */
export const NAME_SIMILARITY_THRESHOLD = 0.5;

/**
 * One statement that sets the search transaction's timeout and threshold, and keeps the planner
 * off sequential scans of `entry_search`: it prices the trigram and prefix tests of each row far
 * below their cost (about 3 µs a row), and so scans 33,000 names in 60-100 ms where the indexes
 * answer in 10-30 ms (docs/performance.md#search).
 */
export function searchSettingsSql(statementTimeoutMs: number): SqlFragment {
  return {
    sql: `select set_config('statement_timeout', ?, true), set_config('pg_trgm.word_similarity_threshold', ?, true),
      set_config('enable_seqscan', 'off', true)`,
    bindings: [String(Math.trunc(statementTimeoutMs)), String(NAME_SIMILARITY_THRESHOLD)],
  };
}

const QUERY = "registry_search_query(string_to_array(?, ' '))";
/** Weights of D, C, B, A; D is unused. */
const WEIGHTS = "'{0, 0.1, 0.4, 1}'::float4[]";

/**
 * The page's matches are found, scored, ordered and cut in `entry_search` (migration 0020), which
 * holds only what search may show; only the page's rows are then read from `entries`.
 */
export function searchPageSql(query: SearchQuery, page: { readonly after?: readonly string[]; readonly size: number }): SqlFragment {
  const text = query.words.join(" ");
  const typeFilter = query.entryType === "" ? "" : "and entry_type = ?";
  const matches = `
    select sequence, name, base_did,
      ts_rank_cd(${WEIGHTS}, document, ${QUERY})::float8 + similarity(name, ?)::float8 as ${SCORE_ALIAS}
    from entry_search
    where (document @@ ${QUERY} or ? <% name) ${typeFilter}`;
  const after = page.after === undefined ? undefined : afterSql(page.after);
  const order = `${SCORE_ALIAS} desc, name collate "C", base_did collate "C"`;
  return {
    sql: `
      select entries.*, page.${SCORE_ALIAS}::text as ${SCORE_ALIAS}_text
      from (
        select * from (${matches}) matches
        ${after === undefined ? "" : `where ${after.sql}`}
        order by ${order}
        limit ?
      ) page
      join entries on entries.sequence = page.sequence
      order by page.${SCORE_ALIAS} desc, page.name collate "C", page.base_did collate "C"`,
    bindings: [text, text, text, text, ...(query.entryType === "" ? [] : [query.entryType]), ...(after?.bindings ?? []), page.size],
  };
}

/** Rows after a position in the order: lower score, or the same score and a later (name, DID). */
function afterSql(position: readonly string[]): SqlFragment {
  const [score, name, baseDid] = position as SearchPosition;
  return {
    sql: `(${SCORE_ALIAS} < ?::float8 or (${SCORE_ALIAS} = ?::float8 and (name collate "C" > ? or (name collate "C" = ? and base_did collate "C" > ?))))`,
    bindings: [score, score, name, name, baseDid],
  };
}
