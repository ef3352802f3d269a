/**
 * Compiles a search (search-query.ts) into one SELECT for knex. Every value from the request is a
 * `?` binding; the words reach SQL as one space-separated string, split again by the database.
 *
 * A match is a latest version, active or deprecated (the rows of `entry_search`), whose text
 * (migrations 0020 and 0021) has every word by stem or prefix, or whose name is a near spelling of
 * the searched text (pg_trgm's word similarity). Matches rank in tiers, each holding the matches
 * no tier above holds: the exact name (its words are the searched words), every word in the name,
 * a near spelling of the name, every word in the tags, then the rest (the description, or words
 * spread over fields). Within a tier the newest first, by the row's sequence (unique among latest
 * versions): a total order, so a keyset cursor (tier score, sequence) neither repeats nor skips.
 *
 * Why tiers in sequence order: a common word matches a large share of the names, and scoring
 * every match before cutting the page grew with the matches (docs/performance.md#search). Here
 * each tier first walks the `entry_search_sequence` index from the cursor, a bounded number of
 * rows per row of the page: a dense tier fills its page within the walk. Only when the walk falls
 * short and rows remain beyond it is the tier sparse, and then its GIN index finds its few
 * matches, which are sorted. The tiers are `UNION ALL` branches under the page's LIMIT, so a tier below a full page
 * is never read. The work per page is bounded by the walk, or by a sparse tier's matches.
 */
import type { SqlFragment } from "./discovery-sql.js";
import type { SearchQuery } from "./search-repository.js";

/** The position a cursor carries: the row's tier score and its sequence, as text. */
export type SearchPosition = readonly [score: string, sequence: string];

export const SCORE_ALIAS = "_search_score";

/**
 * How close a name must be to the searched text (pg_trgm word similarity, 0 to 1) to be found by
 * spelling alone: 0.5 finds one dropped, doubled or swapped letter in a word of seven or more
 * (pg_trgm's default, 0.6, misses "lantren" for "lantern"). Set for each search, so the server's
 * own setting does not change answers.
 */
export const NAME_SIMILARITY_THRESHOLD = 0.5;

/**
 * A text tier walks at most this many rows for each row its page needs: a denser tier fills the
 * page within the walk, and a sparser one has few enough matches to read them all through its
 * index. A GIN index's prefix terms read every row holding each word, not only those holding all
 * of them, so two common words that rarely meet are cheaper walked.
 */
export const TEXT_WALK_ROWS_PER_ROW = 400;
/** The misspelt-name tier's, shorter: its test, trigram similarity, costs several times a text test. */
export const SPELLING_WALK_ROWS_PER_ROW = 150;

/**
 * One statement that sets the search transaction's timeout and threshold. Parallel plans are off
 * because the page relies on `UNION ALL` giving its branches in order, which a serial Append does.
 * Sequential scans are off: the planner prices the trigram and prefix tests of each row far below
 * their cost and would scan the whole table (docs/performance.md#search).
 */
export function searchSettingsSql(statementTimeoutMs: number): SqlFragment {
  return {
    sql: `select set_config('statement_timeout', ?, true), set_config('pg_trgm.word_similarity_threshold', ?, true),
      set_config('enable_seqscan', 'off', true), set_config('max_parallel_workers_per_gather', '0', true)`,
    bindings: [String(Math.trunc(statementTimeoutMs)), String(NAME_SIMILARITY_THRESHOLD)],
  };
}

const QUERY = "registry_search_query(string_to_array(?, ' '))";

interface Tier {
  readonly score: number;
  /** The tier's own test; its binding is the searched words joined by spaces, once per `?`. */
  readonly test: string;
  /** Rows walked per row of the page before the tier counts as sparse; 0 for the exact name, one B-tree lookup. */
  readonly walkRowsPerRow: number;
}

/** Best first. A row belongs to the first tier whose test it passes. */
export const SEARCH_TIERS: readonly Tier[] = [
  { score: 5, test: "name_words = ?", walkRowsPerRow: 0 },
  { score: 4, test: `name_document @@ ${QUERY}`, walkRowsPerRow: TEXT_WALK_ROWS_PER_ROW },
  { score: 3, test: "? <% name", walkRowsPerRow: SPELLING_WALK_ROWS_PER_ROW },
  { score: 2, test: `tags_document @@ ${QUERY}`, walkRowsPerRow: TEXT_WALK_ROWS_PER_ROW },
  { score: 1, test: `document @@ ${QUERY}`, walkRowsPerRow: TEXT_WALK_ROWS_PER_ROW },
];

interface TierContext {
  readonly text: string;
  readonly entryType: string;
  readonly after: SearchPosition | undefined;
  readonly size: number;
}

/**
 * The page's rows are found and cut in `entry_search` (migrations 0020, 0021), which holds only
 * what search may show; only the page's rows are then read from `entries`.
 */
export function searchPageSql(query: SearchQuery, page: { readonly after?: readonly string[]; readonly size: number }): SqlFragment {
  const after = page.after as SearchPosition | undefined;
  const context: TierContext = { text: query.words.join(" "), entryType: query.entryType, after, size: page.size };
  const cursorScore = after === undefined ? Number.POSITIVE_INFINITY : Number(after[0]);
  const live = SEARCH_TIERS.map((tier, index) => ({ tier, above: SEARCH_TIERS.slice(0, index) })).filter(
    ({ tier }) => tier.score <= cursorScore,
  );
  if (live.length === 0) return { sql: `select entries.*, null::text as ${SCORE_ALIAS}_text from entries where false`, bindings: [] };
  const walks = live.filter(({ tier }) => tier.walkRowsPerRow > 0).flatMap(({ tier, above }) => walkSql(tier, above, context));
  const branches = live.flatMap(({ tier, above }) =>
    tier.walkRowsPerRow > 0 ? [walkedSql(tier), sparseSql(tier, above, context)] : [lookupSql(tier, context)],
  );
  const parts = [...walks, ...branches];
  return {
    sql: `
      ${walks.length === 0 ? "" : `with ${walks.map((walk) => walk.sql).join(",\n")}`}
      select entries.*, page.${SCORE_ALIAS}::text as ${SCORE_ALIAS}_text
      from (
        select * from (${branches.map((branch) => `(${branch.sql})`).join(" union all ")}) tiers
        limit ?
      ) page
      join entries on entries.sequence = page.sequence
      order by page.${SCORE_ALIAS} desc, page.sequence desc`,
    bindings: [...parts.flatMap((part) => part.bindings), page.size],
  };
}

/** The conditions every branch of a tier shares: its test, no tier above's, the type. */
function tierConditions(tier: Tier, above: readonly Tier[], context: TierContext, test = testSql(tier.test, context.text)): SqlFragment[] {
  const conditions = [
    test,
    ...above.map((higher) => {
      const excluded = testSql(higher.test, context.text);
      return { sql: `not (${excluded.sql})`, bindings: excluded.bindings };
    }),
  ];
  if (context.entryType !== "") conditions.push({ sql: "entry_type = ?", bindings: [context.entryType] });
  return conditions;
}

/** Rows after the cursor, when the cursor is in this tier; `column` is how the branch names the sequence. */
function afterSql(tier: Tier, context: TierContext, column: string): SqlFragment[] {
  if (context.after === undefined || tier.score !== Number(context.after[0])) return [];
  return [{ sql: `${column} < ?::bigint`, bindings: [context.after[1]] }];
}

const walkName = (tier: Tier) => `tier_${tier.score}_walk`;
const doneName = (tier: Tier) => `tier_${tier.score}_walked`;

/**
 * Two materialised CTEs, each run once and only if the tier is read: the tier's matches among the
 * next rows in sequence order, and whether that walk answers the tier's page (it filled the page,
 * or no rows remain beyond it; the second test, an index-only count, runs only when needed).
 */
function walkSql(tier: Tier, above: readonly Tier[], context: TierContext): SqlFragment[] {
  const window = context.size * tier.walkRowsPerRow;
  const after = afterSql(tier, context, "sequence");
  const afterWhere = after.length === 0 ? "" : `where ${after[0]!.sql}`;
  const conditions = tierConditions(tier, above, context);
  return [
    {
      sql: `${walkName(tier)} as materialized (
        select sequence, name, base_did from (select * from entry_search ${afterWhere} order by sequence desc limit ?) walk
        where ${conditions.map((condition) => condition.sql).join(" and ")}
        order by sequence desc limit ?)`,
      bindings: [...after.flatMap((part) => part.bindings), window, ...conditions.flatMap((condition) => condition.bindings), context.size],
    },
    {
      sql: `${doneName(tier)} as materialized (
        select (select count(*) from ${walkName(tier)}) >= ?
          or (select count(*) from (select from entry_search ${afterWhere} order by sequence desc limit ?) rest) < ? as answered)`,
      bindings: [context.size, ...after.flatMap((part) => part.bindings), window, window],
    },
  ];
}

/** The walk's rows, when the walk answers the tier's page. */
function walkedSql(tier: Tier): SqlFragment {
  return {
    sql: `select sequence, name, base_did, ${tier.score}::float8 as ${SCORE_ALIAS} from ${walkName(tier)}
      where (select answered from ${doneName(tier)}) order by sequence desc`,
    bindings: [],
  };
}

/**
 * A sparse tier: its matches through its GIN index, sorted. `sequence + 0` is no indexed
 * expression, so the planner cannot walk the sequence index instead.
 */
function sparseSql(tier: Tier, above: readonly Tier[], context: TierContext): SqlFragment {
  const conditions = [
    ...tierConditions(tier, above, context),
    ...afterSql(tier, context, "sequence + 0"),
    { sql: `not (select answered from ${doneName(tier)})`, bindings: [] },
  ];
  return {
    sql: `select sequence, name, base_did, ${tier.score}::float8 as ${SCORE_ALIAS} from entry_search
      where ${conditions.map((condition) => condition.sql).join(" and ")}
      order by sequence + 0 desc limit ?`,
    bindings: [...conditions.flatMap((condition) => condition.bindings), context.size],
  };
}

/** The exact name: a B-tree lookup of the name's words. */
function lookupSql(tier: Tier, context: TierContext): SqlFragment {
  const conditions = [...tierConditions(tier, [], context), ...afterSql(tier, context, "sequence")];
  return {
    sql: `select sequence, name, base_did, ${tier.score}::float8 as ${SCORE_ALIAS} from entry_search
      where ${conditions.map((condition) => condition.sql).join(" and ")}
      order by sequence desc limit ?`,
    bindings: [...conditions.flatMap((condition) => condition.bindings), context.size],
  };
}

function testSql(test: string, text: string): SqlFragment {
  return {
    sql: test,
    bindings: test
      .split("?")
      .slice(1)
      .map(() => text),
  };
}
