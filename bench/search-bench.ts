/**
 * Ranked search at a million entries: p50/p95 latency of a first page and of a page 1,000 rows
 * deep for the query shapes of issue 23, each through the running server over REST, with the plan
 * Postgres chose for exactly the SQL the server runs (EXPLAIN ANALYZE, in the search's own
 * transaction settings). The baseline is a resolve of one entry, timed by the same loop.
 *
 *   npm run bench -- --only search          this phase alone (about 5 minutes)
 *   npm run bench -- --search-entries N     load N entries instead of 1,000,000
 *
 * The entries are bench/synthetic-entries.ts's, whose names carry a role word (NAME_ROLES) picked
 * with a skew, so one word can be common and another rare. Rate limits are off for the server.
 */
import type { Knex } from "knex";
import { createCursorCodec } from "../src/discovery/page-cursor.js";
import { planSearch } from "../src/discovery/search-query.js";
import { NAME_SIMILARITY_THRESHOLD, searchPageSql, searchSettingsSql } from "../src/discovery/search-sql.js";
import { getJson, type LatencyFigure } from "./discovery-bench.js";
import { withLoadedRegistry } from "./loaded-registry.js";
import { withoutUnexecutedNodes } from "./plan-text.js";
import { measureLatency, type LoadReport } from "./synthetic-entries.js";
import { round } from "./stats.js";

export interface SearchBenchOptions {
  readonly adminUrl: string;
  readonly entries: number;
  readonly samples: number;
  readonly warmup: number;
  readonly depth: number;
  readonly logFile: string;
  readonly say: (text: string) => void;
}

export interface SearchShape {
  readonly name: string;
  readonly q: string;
}

/** One shape per kind the issue names; the words are common or rare in the generated names on purpose. */
export const SEARCH_SHAPES: readonly SearchShape[] = [
  { name: "one word, common", q: "web" },
  { name: "one word, rare", q: "transcriber" },
  { name: "two words", q: "pdf summarizer" },
  { name: "prefix", q: "summ" },
  { name: "misspelt", q: "wether" },
  // Not one of the shapes: the worst case of the tiers, each walked to its bound and found empty.
  { name: "no match", q: "zzqx" },
];

export interface SearchShapeFigures {
  readonly name: string;
  readonly q: string;
  readonly first: LatencyFigure;
  /** Absent when the query has fewer matches than the depth (possible below a million entries). */
  readonly deep?: LatencyFigure;
  /** Every match, counted by the bench itself (untimed), for scale. */
  readonly matches: number;
  readonly plans: { readonly first: string; readonly deep?: string };
}

export interface SearchFigures {
  readonly load: LoadReport;
  /** The load average (1, 5, 15 minutes) when the timed requests began and ended. */
  readonly loadAverage: { readonly start: readonly number[]; readonly end: readonly number[] };
  readonly baseline: LatencyFigure;
  readonly shapes: readonly SearchShapeFigures[];
}

export interface SearchTargets {
  readonly p95TargetMs: number;
  readonly depth: number;
}

const PAGE_SIZE = 20;
const WALK_PAGE = 100;

export async function runSearchBench(options: SearchBenchOptions, loadAverage: () => number[]): Promise<SearchFigures> {
  return withLoadedRegistry({ ...options, label: "search", vacuum: ["entries", "entry_search"] }, async ({ db, load, url, secret }) => {
    const search = (q: string, limit: number, cursor = "") =>
      getJson(`${url}/v1/search?${new URLSearchParams({ q, limit: String(limit), ...(cursor === "" ? {} : { cursor }) })}`);
    const start = loadAverage();
    const sample = await search("web", 1);
    const baseline = await measureLatency(() => getJson(`${url}/v1/entries/${encodeURIComponent(sample.entries[0].entryDid)}`), options);
    options.say(`  baseline (resolve one entry): p50 ${baseline.p50Ms} ms, p95 ${baseline.p95Ms} ms`);
    const cursors = createCursorCodec({ secret });
    const shapes: SearchShapeFigures[] = [];
    for (const shape of SEARCH_SHAPES) {
      const figures = await measureShape(shape, { ...options, search, knex: db.knex, cursors });
      shapes.push(figures);
      const deep = figures.deep === undefined ? "no page that deep" : `p50 ${figures.deep.p50Ms} / p95 ${figures.deep.p95Ms} ms`;
      options.say(
        `  ${shape.name} (${shape.q}): ${figures.matches.toLocaleString("en")} matches; first p50 ${figures.first.p50Ms} / p95 ${figures.first.p95Ms} ms; ${options.depth.toLocaleString("en")} deep ${deep}`,
      );
    }
    return {
      load,
      loadAverage: { start, end: loadAverage() },
      baseline: { p50Ms: baseline.p50Ms, p95Ms: baseline.p95Ms },
      shapes,
    };
  });
}

interface ShapeContext extends SearchBenchOptions {
  readonly search: (q: string, limit: number, cursor?: string) => Promise<any>;
  readonly knex: Knex;
  readonly cursors: ReturnType<typeof createCursorCodec>;
}

async function measureShape(shape: SearchShape, context: ShapeContext): Promise<SearchShapeFigures> {
  const plan = planSearch({ q: shape.q, entryType: "" });
  const first = await measureLatency(() => context.search(shape.q, PAGE_SIZE), context);
  const figures = {
    name: shape.name,
    q: shape.q,
    first: { p50Ms: first.p50Ms, p95Ms: first.p95Ms },
    matches: await countMatches(context.knex, plan.query.words),
  };
  const firstPlan = await explain(context.knex, searchPageSql(plan.query, { size: PAGE_SIZE + 1 }));
  const cursor = await walkTo(shape, context);
  if (cursor === undefined) return { ...figures, plans: { first: firstPlan } };
  const deep = await measureLatency(() => context.search(shape.q, PAGE_SIZE, cursor), context);
  const position = context.cursors.decode(cursor, plan.binding).position as string[];
  return {
    ...figures,
    deep: { p50Ms: deep.p50Ms, p95Ms: deep.p95Ms },
    plans: { first: firstPlan, deep: await explain(context.knex, searchPageSql(plan.query, { size: PAGE_SIZE + 1, after: position })) },
  };
}

/** The cursor after `depth` rows, reached the way a client would: page after page; none if the matches end first. */
async function walkTo(shape: SearchShape, context: ShapeContext): Promise<string | undefined> {
  let cursor = "";
  for (let seen = 0; seen < context.depth; seen += WALK_PAGE) {
    const page = await context.search(shape.q, WALK_PAGE, cursor);
    if (page.nextCursor === undefined) return undefined;
    cursor = page.nextCursor;
  }
  return cursor;
}

/** What search matches (search-sql.ts): every word in the text, or a near spelling of the name. */
async function countMatches(knex: Knex, words: readonly string[]): Promise<number> {
  const text = words.join(" ");
  return knex.transaction(async (tx) => {
    await tx.raw("select set_config('pg_trgm.word_similarity_threshold', ?, true)", [String(NAME_SIMILARITY_THRESHOLD)]);
    const result = await tx.raw(
      "select count(*)::int as matches from entry_search where document @@ registry_search_query(string_to_array(?, ' ')) or ? <% name",
      [text, text],
    );
    return result.rows[0].matches as number;
  });
}

async function explain(knex: Knex, statement: { sql: string; bindings: readonly unknown[] }): Promise<string> {
  const settings = searchSettingsSql(60_000);
  return knex.transaction(async (tx) => {
    await tx.raw(settings.sql, settings.bindings as Knex.RawBinding[]);
    const result = await tx.raw(`explain (analyze, costs off, summary off) ${statement.sql}`, statement.bindings as Knex.RawBinding[]);
    return withoutUnexecutedNodes((result.rows as { "QUERY PLAN": string }[]).map((row) => row["QUERY PLAN"]).join("\n"));
  });
}

/** Whether a shape meets the target: the p95 of both pages within it (of the first alone when no page is that deep). */
export function searchVerdict(shape: Pick<SearchShapeFigures, "first" | "deep">, targets: SearchTargets): string {
  const worst = Math.max(shape.first.p95Ms, shape.deep?.p95Ms ?? 0);
  return worst <= targets.p95TargetMs ? "PASS" : `MISS (${round(worst - targets.p95TargetMs, 1)} ms over)`;
}

function rows(figures: SearchFigures, targets: SearchTargets): string[][] {
  return [
    [
      "Query",
      "q",
      "Matches",
      "First p50",
      "First p95",
      `${targets.depth.toLocaleString("en")} deep p50`,
      "Deep p95",
      `Target p95 <= ${targets.p95TargetMs} ms`,
    ],
    ["Baseline: resolve one entry", "", "1", `${figures.baseline.p50Ms}`, `${figures.baseline.p95Ms}`, "", "", ""],
    ...figures.shapes.map((shape) => [
      shape.name,
      shape.q,
      shape.matches.toLocaleString("en"),
      `${shape.first.p50Ms}`,
      `${shape.first.p95Ms}`,
      shape.deep === undefined ? "no page" : `${shape.deep.p50Ms}`,
      shape.deep === undefined ? "" : `${shape.deep.p95Ms}`,
      searchVerdict(shape, targets),
    ]),
  ];
}

function heading(figures: SearchFigures): string {
  const loads = (values: readonly number[]) => values.map((value) => value.toFixed(2)).join(" ");
  return `${figures.load.count.toLocaleString("en")} entries (${figures.load.names.toLocaleString("en")} names) loaded in ${figures.load.seconds} s; load average ${loads(figures.loadAverage.start)} at the start, ${loads(figures.loadAverage.end)} at the end.`;
}

export function renderSearchTable(figures: SearchFigures, targets: SearchTargets): string {
  const table = rows(figures, targets);
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const lines = table.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  "));
  const plans = figures.shapes.flatMap((shape) => [
    "",
    `EXPLAIN ANALYZE: ${shape.name} (${shape.q}), branches never executed left out`,
    "  first page:",
    indent(shape.plans.first),
    ...(shape.plans.deep === undefined ? [] : [`  page ${targets.depth.toLocaleString("en")} rows deep:`, indent(shape.plans.deep)]),
  ]);
  return [`Search: ${heading(figures)} Latency in ms (REST, sequential requests)`, ...lines, ...plans].join("\n");
}

export function renderSearchMarkdown(figures: SearchFigures, targets: SearchTargets): string {
  const [header, ...body] = rows(figures, targets);
  const table = [
    `| ${header!.join(" | ")} |`,
    `| ${header!.map((_, i) => (i < 2 || i === header!.length - 1 ? "---" : "---:")).join(" | ")} |`,
    ...body.map((row) => `| ${row.join(" | ")} |`),
  ];
  const plans = figures.shapes.flatMap((shape) => [
    "",
    `<details><summary>${shape.name}: <code>${shape.q}</code></summary>`,
    "",
    "```text",
    "-- first page (branches never executed left out)",
    shape.plans.first,
    ...(shape.plans.deep === undefined ? [] : [`-- page ${targets.depth.toLocaleString("en")} rows deep`, shape.plans.deep]),
    "```",
    "",
    "</details>",
  ]);
  return [heading(figures), "", ...table, ...plans].join("\n");
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
}
