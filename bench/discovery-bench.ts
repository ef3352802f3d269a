/**
 * Discovery at a million entries: p50/p95 latency of a first page and of a page 10,000 rows deep
 * for the documented query shapes, each through the running server over REST, with the plan
 * Postgres chose for exactly the SQL the server runs (EXPLAIN ANALYZE). The baseline, measured
 * in the same run by the same client loop, is a resolve of one entry: the cheapest read there is.
 *
 *   npm run bench -- --only discovery        this phase alone (about 3-4 minutes)
 *   npm run bench -- --discovery-entries N   load N entries instead of 1,000,000
 *
 * Rate limits are off for the server under test: the load comes from one address.
 */
import type { Knex } from "knex";
import { createCursorCodec } from "../src/discovery/page-cursor.js";
import type { DiscoveryPlan } from "../src/discovery/discovery-plan.js";
import { planRequest } from "../src/discovery/discovery-service.js";
import type { StructuredCondition } from "../src/discovery/structured-conditions.js";
import { buildCountQuery, buildPageQuery } from "../src/storage/knex-discovery-repository.js";
import { DEFAULT_DISCOVERY_STATUSES } from "../src/domain/version-state.js";
import { withLoadedRegistry } from "./loaded-registry.js";
import { measureLatency, type LoadReport } from "./synthetic-entries.js";
import { round } from "./stats.js";

export interface DiscoveryBenchOptions {
  readonly adminUrl: string;
  readonly entries: number;
  readonly samples: number;
  readonly warmup: number;
  readonly depth: number;
  readonly logFile: string;
  readonly say: (text: string) => void;
}

/** A request as its REST body is written: structured conditions or query text. */
type QueryShape = { readonly name: string } & (
  | { readonly endpoint: "discover"; readonly body: { readonly entryType?: string; readonly conditions: readonly StructuredCondition[] } }
  | { readonly endpoint: "query"; readonly body: { readonly query: string } }
);

/** The shapes the issue names, with values the loader makes common or rare on purpose. */
export const QUERY_SHAPES: readonly QueryShape[] = [
  { name: "tags CONTAINS 'search'", endpoint: "discover", body: { conditions: [{ field: "tags", op: "CONTAINS", value: "search" }] } },
  {
    name: "entryType = skill, publishedAt >= 2026-01-01",
    endpoint: "discover",
    body: { entryType: "skill", conditions: [{ field: "publishedAt", op: ">=", value: "2026-01-01" }] },
  },
  {
    name: "version >= 2.0.0, isLatest",
    endpoint: "discover",
    body: {
      conditions: [
        { field: "version", op: ">=", value: "2.0.0" },
        { field: "isLatest", op: "=", value: true },
      ],
    },
  },
  {
    name: "QL: IN, OR, ORDER BY published_at DESC",
    endpoint: "query",
    body: {
      query:
        "SELECT entry_did, version, published_at FROM entries WHERE entry_type IN ('skill', 'agent') AND (tags CONTAINS 'pdf' OR tags CONTAINS 'weather') ORDER BY published_at DESC",
    },
  },
  {
    name: "description CONTAINS 'weather'",
    endpoint: "discover",
    body: { conditions: [{ field: "description", op: "CONTAINS", value: "weather" }] },
  },
];

export interface LatencyFigure {
  readonly p50Ms: number;
  readonly p95Ms: number;
}

export interface QueryFigures {
  readonly name: string;
  readonly first: LatencyFigure;
  readonly deep: LatencyFigure;
  /** Deep page p50 over first page p50: 1 means a deep page costs what the first does. */
  readonly deepOverFirst: number;
  /** Every match, counted by the bench itself (untimed), for scale. */
  readonly matches: number;
  /** What the first page answered as total ("1000+" past the count limit). */
  readonly total?: string;
  readonly plans: { readonly first: string; readonly deep: string; readonly count?: string };
  readonly sequentialScan: boolean;
}

export interface DiscoveryFigures {
  readonly load: LoadReport;
  readonly baseline: LatencyFigure;
  readonly queries: readonly QueryFigures[];
}

const PAGE_SIZE = 20;
/** The server's default DISCOVERY_TOTAL_LIMIT, so the count EXPLAINed is the count it runs. */
const TOTAL_LIMIT = 1_000;
const WALK_PAGE = 100;

export async function runDiscoveryBench(options: DiscoveryBenchOptions): Promise<DiscoveryFigures> {
  return withLoadedRegistry({ ...options, label: "discovery", vacuum: ["entries"] }, async ({ db, load, url, secret }) => {
    const post = (endpoint: QueryShape["endpoint"], body: unknown) =>
      postJson(`${url}${endpoint === "discover" ? "/v1/discover" : "/v1/discover/ql"}`, body);
    const sample = await post("discover", { limit: 1 });
    const resolvePath = `/v1/entries/${encodeURIComponent(sample.entries[0].entryDid)}`;
    const baseline = await measureLatency(() => getJson(url + resolvePath), options);
    options.say(`  baseline (resolve one entry): p50 ${baseline.p50Ms} ms, p95 ${baseline.p95Ms} ms`);
    const cursors = createCursorCodec({ secret });
    const queries: QueryFigures[] = [];
    for (const shape of QUERY_SHAPES) {
      const figures = await measureShape(shape, { ...options, post, knex: db.knex, cursors });
      queries.push(figures);
      options.say(
        `  ${shape.name}: first p50 ${figures.first.p50Ms} / p95 ${figures.first.p95Ms} ms; ${options.depth.toLocaleString("en")} deep p50 ${figures.deep.p50Ms} / p95 ${figures.deep.p95Ms} ms${figures.sequentialScan ? "; SEQUENTIAL SCAN" : ""}`,
      );
    }
    return { load, baseline: { p50Ms: baseline.p50Ms, p95Ms: baseline.p95Ms }, queries };
  });
}

interface ShapeContext extends DiscoveryBenchOptions {
  readonly post: (endpoint: QueryShape["endpoint"], body: unknown) => Promise<any>;
  readonly knex: Knex;
  readonly cursors: ReturnType<typeof createCursorCodec>;
}

async function measureShape(shape: QueryShape, context: ShapeContext): Promise<QueryFigures> {
  const firstBody = { ...shape.body, limit: PAGE_SIZE };
  const firstPage = await context.post(shape.endpoint, firstBody);
  const plan = planOf(shape);
  assertDefaultStatuses(shape, buildPageQuery(context.knex, plan, { size: PAGE_SIZE + 1 }).toSQL(), firstPage);
  const first = await measureLatency(() => context.post(shape.endpoint, firstBody), context);
  const cursor = await walkTo(shape, context);
  const deepBody = { ...shape.body, limit: PAGE_SIZE, cursor };
  const deep = await measureLatency(() => context.post(shape.endpoint, deepBody), context);
  const position = context.cursors.decode(cursor, plan.binding).position as string[];
  const plans = {
    first: await explain(context.knex, buildPageQuery(context.knex, plan, { size: PAGE_SIZE + 1 })),
    deep: await explain(context.knex, buildPageQuery(context.knex, plan, { size: PAGE_SIZE + 1, after: position })),
    ...(shape.endpoint === "discover" ? { count: await explain(context.knex, buildCountQuery(context.knex, plan, TOTAL_LIMIT)) } : {}),
  };
  return {
    name: shape.name,
    first: { p50Ms: first.p50Ms, p95Ms: first.p95Ms },
    deep: { p50Ms: deep.p50Ms, p95Ms: deep.p95Ms },
    deepOverFirst: round(deep.p50Ms / first.p50Ms, 2),
    matches: Number((await buildCountQuery(context.knex, plan, Infinity))[0].count),
    ...(firstPage.total === undefined ? {} : { total: `${firstPage.total}${firstPage.totalIsLowerBound ? "+" : ""}` }),
    plans,
    // A sequential scan under the count's LIMIT stops at the limit: the planner's right choice
    // when matches are common. Anywhere else it would read the whole table.
    sequentialScan:
      /Seq Scan/.test(plans.first) ||
      /Seq Scan/.test(plans.deep) ||
      (plans.count !== undefined && /Seq Scan/.test(plans.count) && !/Limit/.test(plans.count)),
  };
}

/**
 * The shapes name no status, so the server must add its default filter, `status IN ('active',
 * 'deprecated')`: a figure measured without it would not be the one users get.
 */
function assertDefaultStatuses(shape: QueryShape, sql: Knex.Sql, firstPage: { entries?: { status?: string }[] }): void {
  const expected = DEFAULT_DISCOVERY_STATUSES.join(", ");
  const bindings = sql.bindings.map(String);
  if (!/\bstatus\b/.test(sql.sql) || !DEFAULT_DISCOVERY_STATUSES.every((status) => bindings.includes(status))) {
    throw new Error(`${shape.name}: the server's SQL lacks the default status filter (${expected}): ${sql.sql}`);
  }
  const other = (firstPage.entries ?? []).find(
    (entry) => entry.status !== undefined && !(DEFAULT_DISCOVERY_STATUSES as readonly string[]).includes(entry.status),
  );
  if (other !== undefined) throw new Error(`${shape.name}: a first page holds a ${other.status} entry; the default is ${expected}`);
}

/** The cursor after `depth` rows, reached the way a client would: page after page. */
async function walkTo(shape: QueryShape, context: ShapeContext): Promise<string> {
  let cursor = "";
  for (let seen = 0; seen < context.depth; seen += WALK_PAGE) {
    const page = await context.post(shape.endpoint, { ...shape.body, limit: WALK_PAGE, cursor });
    if (page.nextCursor === undefined) throw new Error(`${shape.name}: fewer than ${context.depth} matches`);
    cursor = page.nextCursor;
  }
  return cursor;
}

/** The plan the server makes for this request, made by the service's own planning function (it is pure). */
function planOf(shape: QueryShape): DiscoveryPlan {
  // As the REST edge reads the body: an absent entryType is the empty string.
  if (shape.endpoint === "discover") return planRequest("discover", { entryType: "", ...shape.body });
  return planRequest("query", shape.body);
}

async function explain(knex: Knex, query: Knex.QueryBuilder): Promise<string> {
  const { sql, bindings } = query.toSQL();
  const result = await knex.raw(`explain (analyze, buffers, costs off, summary off) ${sql}`, bindings as Knex.RawBinding[]);
  return (result.rows as { "QUERY PLAN": string }[]).map((row) => row["QUERY PLAN"]).join("\n");
}

async function postJson(url: string, body: unknown): Promise<any> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const json = await response.json();
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

export async function getJson(url: string): Promise<any> {
  const response = await fetch(url);
  const json = await response.json();
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

export interface DiscoveryTargets {
  readonly p95TargetMs: number;
  readonly depth: number;
}

/** Whether a figure meets the target: p95 of both pages within it, and no sequential scan. */
function verdict(query: QueryFigures, targets: DiscoveryTargets): string {
  const worst = Math.max(query.first.p95Ms, query.deep.p95Ms);
  if (query.sequentialScan) return "MISS (sequential scan)";
  return worst <= targets.p95TargetMs ? "PASS" : `MISS (${round(worst - targets.p95TargetMs, 1)} ms over)`;
}

function rows(figures: DiscoveryFigures, targets: DiscoveryTargets): string[][] {
  return [
    [
      "Query",
      "Matches",
      "total",
      "First p50",
      "First p95",
      `${targets.depth.toLocaleString("en")} deep p50`,
      "Deep p95",
      "Deep / first (p50)",
      `Target p95 <= ${targets.p95TargetMs} ms`,
    ],
    ["Baseline: resolve one entry", "1", "", `${figures.baseline.p50Ms}`, `${figures.baseline.p95Ms}`, "", "", "", ""],
    ...figures.queries.map((query) => [
      query.name,
      query.matches.toLocaleString("en"),
      query.total ?? "",
      `${query.first.p50Ms}`,
      `${query.first.p95Ms}`,
      `${query.deep.p50Ms}`,
      `${query.deep.p95Ms}`,
      `${query.deepOverFirst}`,
      verdict(query, targets),
    ]),
  ];
}

export function renderDiscoveryTable(figures: DiscoveryFigures, targets: DiscoveryTargets): string {
  const table = rows(figures, targets);
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const lines = table.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  "));
  const plans = figures.queries.flatMap((query) => [
    "",
    `EXPLAIN ANALYZE: ${query.name}`,
    "  first page:",
    indent(query.plans.first),
    `  page ${targets.depth.toLocaleString("en")} rows deep:`,
    indent(query.plans.deep),
    ...(query.plans.count === undefined ? [] : ["  total (first page only, counted up to the limit):", indent(query.plans.count)]),
  ]);
  return [
    `Discovery at ${figures.load.count.toLocaleString("en")} entries, latency in ms (REST, sequential requests)`,
    ...lines,
    ...plans,
  ].join("\n");
}

export function renderDiscoveryMarkdown(figures: DiscoveryFigures, targets: DiscoveryTargets): string {
  const [header, ...body] = rows(figures, targets);
  const table = [
    `| ${header!.join(" | ")} |`,
    `| ${header!.map((_, i) => (i === 0 || i === header!.length - 1 ? "---" : "---:")).join(" | ")} |`,
    ...body.map((row) => `| ${row.join(" | ")} |`),
  ];
  const plans = figures.queries.flatMap((query) => [
    "",
    `<details><summary>${query.name}</summary>`,
    "",
    "```text",
    "-- first page",
    query.plans.first,
    `-- page ${targets.depth.toLocaleString("en")} rows deep`,
    query.plans.deep,
    ...(query.plans.count === undefined ? [] : ["-- total (first page only, counted up to the limit)", query.plans.count]),
    "```",
    "",
    "</details>",
  ]);
  return [
    `${figures.load.count.toLocaleString("en")} entries (${figures.load.names.toLocaleString("en")} names) loaded in ${figures.load.seconds} s; table and indexes ${figures.load.tableMb} MB.`,
    "",
    ...table,
    ...plans,
  ].join("\n");
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
}
