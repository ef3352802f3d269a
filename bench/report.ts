/** The benchmark's figures, its targets, and their rendering as a console table and as Markdown. */
import type { FeedFigures, ReplayFigures } from "./feed-bench.js";
import type { HistoryRun } from "./lifecycle-bench.js";
import type { StreamFigures } from "./stream-bench.js";
import type { CreateLoadResult } from "./http-load.js";
import type { H2loadResult } from "./h2load.js";
import type { ProtocolRow } from "./protocol-rows.js";
import type { Run } from "./process-sampler.js";
import { median } from "./stats.js";
import { FLOOR_TARGETS, floorKeyOf, judgeRow, type RowJudgement } from "./floor-targets.js";

export interface ResolveRowFigures {
  readonly key: ProtocolRow["key"];
  readonly label: string;
  readonly rpc: boolean;
  readonly target: ProtocolRow["target"];
  readonly transport: ProtocolRow["transport"];
  /** The h2load command line, with the server's URL as $URL. */
  readonly command: string;
  /** Bytes of one successful answer's body: every 2xx answer under load is held to it. */
  readonly bodyBytes: number;
  readonly runs: readonly Run<H2loadResult>[];
}

export interface CreateFigures {
  readonly key: "rest" | "grpc";
  readonly label: string;
  readonly generator: string;
  readonly runs: readonly Run<CreateLoadResult & { readonly signPerSecond: number }>[];
}

/** docs/lifecycle.md's rows (bench/lifecycle-bench.ts): signed actions per second, and a long history read. */
export interface LifecycleFigures {
  readonly actions?: Omit<CreateFigures, "key">;
  readonly history?: { readonly label: string; readonly records: number; readonly runs: readonly HistoryRun[] };
}

export interface Figures {
  readonly resolves: readonly ResolveRowFigures[];
  readonly creates: readonly CreateFigures[];
  readonly rss: { readonly peakMb: number; readonly medianMb: number; readonly samples: number };
  /** The change feed part (bench/feed-bench.ts), when it ran. */
  readonly feed?: FeedFigures;
  /** Many streams at once (bench/stream-bench.ts), with the feed part. */
  readonly streams?: StreamFigures;
  /** Lifecycle actions and a name's history, when they ran. */
  readonly lifecycle?: LifecycleFigures;
}

export const TARGETS = {
  /** Resolve rows against the bare floors of their transport (bench/floor-targets.ts). */
  floors: FLOOR_TARGETS,
  /** gRPC creates/s as a share of REST's. */
  grpcCreatesOfRest: 1,
  /** Standing targets from the first speed requirement. */
  restCreatesPerSecond: 1_000,
  rssMb: 250,
  /** Change feed (issue 11): replay over REST pages or the stream, records a second. */
  feedReplayPerSecond: 20_000,
  /** Change feed (issue 11): p99 from a change's commit to its delivery to a live watcher. */
  feedLagP99Ms: 100,
  /** Change feed (issue 11): creates a second with every create appending to the log. */
  createsWithLogPerSecond: 1_000,
  /** Feed streams (issue 20): the server's RSS with 1,000 idle SSE streams open. */
  idleStreamsRssMb: 300,
  /** Feed streams (issue 20): create p50 with 500 SSE streams following, as a multiple of none. */
  createP50UnderStreams: 1.5,
  /** Lifecycle: signed actions a second over REST, each appending to the log. */
  lifecycleActionsPerSecond: 1_000,
  /** Lifecycle: p95 of the history of a name with 200 records, one request at a time. */
  historyP95Ms: 10,
} as const;

export interface MachineInfo {
  readonly loadAverageAtStart: readonly number[];
  readonly code: { readonly commit: string; readonly uncommitted: readonly string[] };
  readonly entryCacheSize: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGb: number;
  readonly node: string;
  readonly postgres: string;
  readonly h2load: string;
}

const n = (value: number, digits = 0) =>
  Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a";

/** Server CPU time per successful request, in microseconds: robust to how busy the machine was. */
export const cpuMicrosPerRequest = (cpuPercent: number, perSecond: number) => (cpuPercent / 100 / perSecond) * 1e6;

/** The server's CPU time over a resolve row's window (read before and after it) per 2xx answer, in microseconds. */
export const cpuMicrosPerCall = (run: Run<H2loadResult>) => (run.usage.serverCpuSeconds * 1e6) / run.result.ok;

export interface Summary {
  readonly label: string;
  readonly perSecond: number;
  readonly p99Ms: number;
  readonly cpuMicros: number;
  readonly notOk: number;
  readonly runsPerSecond: readonly number[];
  readonly pressure: readonly number[];
}

export function summariseResolve(row: ResolveRowFigures): Summary {
  return {
    label: row.label,
    perSecond: median(row.runs.map((r) => r.result.requestsPerSecond)),
    p99Ms: median(row.runs.map((r) => r.result.latencyP99Ms)),
    cpuMicros: median(row.runs.map(cpuMicrosPerCall)),
    notOk: row.runs.reduce((sum, r) => sum + r.result.notOk + r.result.shortBodies, 0),
    runsPerSecond: row.runs.map((r) => r.result.requestsPerSecond),
    pressure: row.runs.map((r) => r.usage.cpuPressurePercent),
  };
}

export function summariseCreates(figures: Pick<CreateFigures, "label" | "runs">): Summary {
  return {
    label: figures.label,
    perSecond: median(figures.runs.map((r) => r.result.requestsPerSecond)),
    p99Ms: median(figures.runs.map((r) => r.result.latencyP99Ms)),
    cpuMicros: median(figures.runs.map((r) => cpuMicrosPerRequest(r.usage.serverCpuPercent, r.result.requestsPerSecond))),
    // Warmups included: a create refused at any point is a failure.
    notOk: figures.runs.reduce((sum, r) => sum + r.result.notCreatedTotal, 0),
    runsPerSecond: figures.runs.map((r) => r.result.requestsPerSecond),
    pressure: figures.runs.map((r) => r.usage.cpuPressurePercent),
  };
}

interface TableRow {
  readonly protocol: string;
  readonly perSecond: string;
  readonly ofFloor: string;
  readonly p99: string;
  readonly p99OfFloor: string;
  readonly cpu: string;
  readonly target: string;
  readonly notOk: string;
  readonly runs: string;
}

export interface Verdict {
  readonly target: string;
  readonly measured: string;
  readonly pass: boolean | undefined;
}

/** Each resolve row against its floor (undefined for the floors, or when the floor did not run). */
export function judgeRows(resolves: readonly ResolveRowFigures[]): Map<ResolveRowFigures["key"], RowJudgement | undefined> {
  const summaries = new Map(resolves.map((row) => [row.key, summariseResolve(row)]));
  return new Map(resolves.map((row) => [row.key, judgeRow(row, summaries.get(row.key)!, summaries.get(floorKeyOf(row.transport)))]));
}

function tableRows(f: Figures): TableRow[] {
  const judged = judgeRows(f.resolves);
  const line = (s: Summary, judgement: RowJudgement | undefined, unit: string): TableRow => ({
    protocol: `${s.label}${unit}`,
    perSecond: n(s.perSecond),
    ofFloor: judgement === undefined ? "" : n(judgement.ofFloor, 2),
    p99: n(s.p99Ms, 1),
    p99OfFloor: judgement === undefined ? "" : n(judgement.p99OfFloor, 2),
    cpu: n(s.cpuMicros),
    target: judgement === undefined ? "" : `${judgement.pass ? "PASS" : "MISS"} ${judgement.target}`,
    notOk: n(s.notOk),
    runs: s.runsPerSecond.map((v) => n(v)).join(" / "),
  });
  return [
    ...f.resolves.map((row) => line(summariseResolve(row), judged.get(row.key), "")),
    ...f.creates.map((c) => line(summariseCreates(c), undefined, " (creates/s)")),
    ...(f.lifecycle?.actions === undefined ? [] : [line(summariseCreates(f.lifecycle.actions), undefined, " (actions/s)")]),
  ];
}

export function verdicts(f: Figures): Verdict[] {
  const out: Verdict[] = [];
  const judged = judgeRows(f.resolves);
  for (const transport of ["h2c", "h1"] as const) {
    const rows = f.resolves.filter((row) => row.transport === transport && judged.get(row.key) !== undefined);
    if (rows.length === 0) continue;
    const misses = rows.filter((row) => !judged.get(row.key)!.pass);
    const lowest = [...rows].sort((a, b) => judged.get(a.key)!.ofFloor - judged.get(b.key)!.ofFloor)[0]!;
    const highestP99 = [...rows].sort((a, b) => judged.get(b.key)!.p99OfFloor - judged.get(a.key)!.p99OfFloor)[0]!;
    out.push({
      target:
        transport === "h2c"
          ? `every h2c row >= ${FLOOR_TARGETS.h2cOfFloor} of the bare node:http2 floor's req/s, p99 <= ${FLOOR_TARGETS.h2cP99OfFloor}x its`
          : `every HTTP/1.1 row (REST's first) >= ${FLOOR_TARGETS.h1OfFloor} of the bare node:http floor's req/s`,
      measured: `lowest ${n(judged.get(lowest.key)!.ofFloor, 2)} (${lowest.label})${transport === "h2c" ? `, highest p99 ${n(judged.get(highestP99.key)!.p99OfFloor, 2)}x (${highestP99.label})` : ""}; ${misses.length} of ${rows.length} missed${misses.length === 0 ? "" : ` (${misses.map((row) => row.label).join(", ")})`}`,
      pass: misses.length === 0,
    });
  }
  const restCreates = f.creates.find((c) => c.key === "rest");
  const grpcCreates = f.creates.find((c) => c.key === "grpc");
  if (restCreates !== undefined && grpcCreates !== undefined) {
    const r = summariseCreates(restCreates);
    const g = summariseCreates(grpcCreates);
    out.push({
      target: "gRPC creates/s >= REST's",
      measured: `${n(g.perSecond / r.perSecond, 2)} (${n(g.perSecond)} against ${n(r.perSecond)})`,
      pass: g.perSecond >= TARGETS.grpcCreatesOfRest * r.perSecond,
    });
  }
  if (restCreates !== undefined) {
    const r = summariseCreates(restCreates);
    out.push({
      target: `REST creates >= ${n(TARGETS.restCreatesPerSecond)}/s (standing)`,
      measured: n(r.perSecond),
      pass: r.perSecond >= TARGETS.restCreatesPerSecond,
    });
  }
  out.push(...feedVerdicts(f));
  out.push(...streamVerdicts(f.streams));
  out.push(...lifecycleVerdicts(f));
  const actions = f.lifecycle?.actions === undefined ? [] : [summariseCreates(f.lifecycle.actions)];
  const notOk = [...f.resolves.map(summariseResolve), ...f.creates.map(summariseCreates), ...actions].filter((s) => s.notOk > 0);
  if (f.resolves.length + f.creates.length + actions.length > 0)
    out.push({
      target: "every request answered successfully (resolves 2xx with a whole body, creates created, actions 200)",
      measured: notOk.length === 0 ? "all" : notOk.map((s) => `${s.label}: ${n(s.notOk)} not OK`).join("; "),
      pass: notOk.length === 0,
    });
  if (f.rss.samples > 0) {
    out.push({
      target: `server RSS under load < ${TARGETS.rssMb} MB (standing)`,
      measured: `peak ${n(f.rss.peakMb)} MB, median ${n(f.rss.medianMb)} MB`,
      pass: f.rss.peakMb < TARGETS.rssMb,
    });
  }
  return out;
}

const HEADERS: TableRow = {
  protocol: "Protocol",
  perSecond: "req/s",
  ofFloor: "of floor",
  p99: "p99 ms",
  p99OfFloor: "p99 of floor",
  cpu: "server CPU µs/call",
  target: "target",
  notOk: "not OK",
  runs: "runs (req/s)",
};
const NUMERIC: readonly (keyof TableRow)[] = ["perSecond", "ofFloor", "p99", "p99OfFloor", "cpu", "notOk"];

const verdictText = (v: Verdict) => (v.pass === undefined ? "" : v.pass ? "PASS" : "MISS");

export function renderTable(f: Figures): string {
  const all = [HEADERS, ...tableRows(f)];
  const keys = (Object.keys(HEADERS) as (keyof TableRow)[]).filter((key) => key !== "runs");
  const widths = keys.map((key) => Math.max(...all.map((row) => row[key].length)));
  const line = (row: TableRow) =>
    keys
      .map((key, i) => (NUMERIC.includes(key) ? row[key].padStart(widths[i]!) : row[key].padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  const targets = verdicts(f).map((v) => `${verdictText(v).padEnd(4)}  ${v.target}: ${v.measured}`);
  const protocols = all.length === 1 ? [] : [line(HEADERS), widths.map((w) => "-".repeat(w)).join("  "), ...all.slice(1).map(line), ""];
  const feed = [
    ...(f.feed === undefined ? [] : feedTables(f.feed)),
    ...(f.streams === undefined ? [] : [streamTable(f.streams)]),
    ...historyTables(f.lifecycle),
  ].flatMap((table) => [...consoleTable(table), ""]);
  return [...protocols, ...feed, "Targets:", ...targets].join("\n");
}

/** The generated part of docs/performance.md's protocol section. */
export function renderMarkdown(
  f: Figures,
  date: string,
  machine: MachineInfo,
  config: { runs: number; durationSeconds: number; warmupSeconds: number },
): string {
  const feedPressure =
    f.feed === undefined
      ? []
      : [...f.feed.replays.flatMap((replay) => replay.runs.map((r) => r.usage.cpuPressurePercent)), f.feed.live.usage.cpuPressurePercent];
  const pressure = [
    ...[...f.resolves, ...f.creates, ...(f.lifecycle?.actions === undefined ? [] : [f.lifecycle.actions])].flatMap((row) =>
      row.runs.map((r) => r.usage.cpuPressurePercent),
    ),
    ...feedPressure,
  ].filter(Number.isFinite);
  const keys = Object.keys(HEADERS) as (keyof TableRow)[];
  const row = (r: TableRow) => `| ${keys.map((key) => r[key]).join(" | ")} |`;
  const commands = f.resolves.map((r) => `${r.label}:\n  ${r.command}`).join("\n");
  return [
    `Code ${machine.code.commit}${machine.code.uncommitted.length === 0 ? "" : ` plus uncommitted changes to ${machine.code.uncommitted.join(", ")}`}, ENTRY_CACHE_SIZE ${machine.entryCacheSize}. Run of ${date.slice(0, 10)} on a ${machine.cpus}-core shared machine (${machine.cpuModel}), Node ${machine.node}, Postgres ${machine.postgres}, ${machine.h2load}; 1/5/15-minute load average at the start ${machine.loadAverageAtStart.join(" / ")}; CPU pressure during the runs ${n(Math.min(...pressure))}-${n(Math.max(...pressure))}%. Medians of ${config.runs} run${config.runs === 1 ? "" : "s"} of ${config.durationSeconds} s (after a ${config.warmupSeconds} s warm-up each).`,
    ...(f.resolves.length + f.creates.length === 0 && f.lifecycle?.actions === undefined
      ? []
      : ["", row(HEADERS), `| ${keys.map((key) => (NUMERIC.includes(key) ? "---:" : "---")).join(" | ")} |`, ...tableRows(f).map(row)]),
    ...historyTables(f.lifecycle).flatMap((table) => ["", ...markdownTable(table)]),
    ...(f.feed === undefined ? [] : feedTables(f.feed).flatMap((table) => ["", ...markdownTable(table)])),
    ...(f.streams === undefined ? [] : ["", ...markdownTable(streamTable(f.streams))]),
    "",
    "| Target | Measured | Result |",
    "| --- | --- | --- |",
    ...verdicts(f).map((v) => `| ${v.target.replace(">=", "≥").replace("<=", "≤")} | ${v.measured} | ${verdictText(v)} |`),
    ...(f.resolves.length === 0
      ? []
      : ["", "<details><summary>h2load command lines</summary>", "", "```text", commands, "```", "", "</details>"]),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// The change feed part (bench/feed-bench.ts): its tables and its targets.

/** A table as text cells; columns listed in `numeric` are right-aligned. */
export interface TextTable {
  readonly header: readonly string[];
  readonly rows: readonly (readonly string[])[];
  readonly numeric: ReadonlySet<number>;
}

const replayPerSecond = (replay: ReplayFigures) => median(replay.runs.map((r) => r.result.recordsPerSecond));

function feedTables(feed: FeedFigures): TextTable[] {
  const replays: TextTable = {
    header: ["Change feed replay", "records/s", "server CPU µs/record", "Postgres CPU %", "runs (records/s)"],
    rows: feed.replays.map((replay) => [
      `${replay.label} (${n(feed.logRecords)} records)`,
      n(replayPerSecond(replay)),
      n(median(replay.runs.map((r) => cpuMicrosPerRequest(r.usage.serverCpuPercent, r.result.recordsPerSecond)))),
      n(median(replay.runs.map((r) => r.usage.postgresCpuPercent))),
      replay.runs.map((r) => n(r.result.recordsPerSecond)).join(" / "),
    ]),
    numeric: new Set([1, 2, 3]),
  };
  const live = feed.live;
  const lag: TextTable = {
    header: [
      "Change feed live",
      "lag p50 ms",
      "lag p99 ms",
      "lag max ms",
      "arrived",
      "in index order, no gap",
      "create p99 ms",
      "bench event-loop delay p99 ms",
    ],
    rows: [
      [
        live.label,
        n(live.lagP50Ms, 1),
        n(live.lagP99Ms, 1),
        n(live.lagMaxMs, 1),
        `${n(live.arrived)} of ${n(live.sent)}`,
        live.problems.length === 0 ? "yes" : "NO",
        n(live.createP99Ms, 1),
        n(live.clientLoopDelayP99Ms, 1),
      ],
    ],
    numeric: new Set([1, 2, 3, 4, 6, 7]),
  };
  return [replays, lag];
}

function streamTable(streams: StreamFigures): TextTable {
  return {
    header: ["Feed streams open", "creates", "p50 ms", "p99 ms", "events delivered", "server RSS MB"],
    rows: [
      ...streams.creates.map((c) => [
        `${n(c.streams)} following the head`,
        c.shape === "open loop" ? `${n(c.created)} at ${n(streams.rate)}/s` : `${n(c.created)} one at a time`,
        n(c.p50Ms, 1),
        n(c.p99Ms, 1),
        c.streams === 0 ? "" : `${n(c.delivered * 100, 1)}%`,
        "",
      ]),
      [`${n(streams.idle.streams)} idle (none: ${n(streams.idle.rssBeforeMb)} MB)`, "", "", "", "", n(streams.idle.rssMb)],
    ],
    numeric: new Set([2, 3, 4, 5]),
  };
}

function streamVerdicts(streams: StreamFigures | undefined): Verdict[] {
  if (streams === undefined) return [];
  const shapes = (["one at a time", "open loop"] as const).map((shape) => {
    const alone = streams.creates.find((c) => c.shape === shape && c.streams === 0);
    const followed = streams.creates.find((c) => c.shape === shape && c.streams > 0);
    const ratio = alone === undefined || followed === undefined ? Number.NaN : followed.p50Ms / alone.p50Ms;
    const what = shape === "open loop" ? `at ${n(streams.rate)}/s` : "one at a time";
    return {
      target: `create p50 (${what}) with 500 SSE streams following <= ${TARGETS.createP50UnderStreams}x none, every event delivered`,
      measured: `${n(followed?.p50Ms ?? Number.NaN, 1)} ms with ${n(followed?.streams ?? 0)} streams, ${n(alone?.p50Ms ?? Number.NaN, 1)} ms with none: ${n(ratio, 2)}x; delivered ${n((followed?.delivered ?? 0) * 100, 1)}%`,
      pass: (followed?.streams ?? 0) >= 500 && ratio <= TARGETS.createP50UnderStreams && followed?.delivered === 1,
    };
  });
  return [
    {
      target: `server RSS with 1,000 idle feed streams < ${TARGETS.idleStreamsRssMb} MB`,
      measured: `${n(streams.idle.rssMb)} MB with ${n(streams.idle.streams)} idle SSE streams (${n(streams.idle.rssBeforeMb)} MB with none)`,
      pass: streams.idle.streams >= 1_000 && streams.idle.rssMb < TARGETS.idleStreamsRssMb,
    },
    ...shapes,
  ];
}

export function consoleTable(table: TextTable): string[] {
  const all = [table.header, ...table.rows];
  // The runs column is left out of the console, as in the protocol table: the run lines show them.
  const columns = table.header.map((_, i) => i).filter((i) => !table.header[i]!.startsWith("runs"));
  const widths = columns.map((column) => Math.max(...all.map((row) => row[column]!.length)));
  const line = (row: readonly string[]) =>
    columns
      .map((column, i) => (table.numeric.has(column) ? row[column]!.padStart(widths[i]!) : row[column]!.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(table.header), widths.map((w) => "-".repeat(w)).join("  "), ...table.rows.map(line)];
}

export function markdownTable(table: TextTable): string[] {
  return [
    `| ${table.header.join(" | ")} |`,
    `| ${table.header.map((_, i) => (table.numeric.has(i) ? "---:" : "---")).join(" | ")} |`,
    ...table.rows.map((row) => `| ${row.join(" | ")} |`),
  ];
}

function feedVerdicts(f: Figures): Verdict[] {
  const feed = f.feed;
  if (feed === undefined) return [];
  const replays = feed.replays.map((replay) => ({
    label: replay.key === "rest" ? "REST pages" : "stream",
    perSecond: replayPerSecond(replay),
  }));
  const best = Math.max(...replays.map((r) => r.perSecond));
  const live = feed.live;
  const delivered = live.problems.length === 0 && live.arrived === live.created && live.created === live.sent;
  const restCreates = f.creates.find((c) => c.key === "rest");
  const creates = restCreates === undefined ? undefined : summariseCreates(restCreates);
  return [
    {
      target: `change feed replay >= ${n(TARGETS.feedReplayPerSecond)} records/s (REST pages or the stream)`,
      measured: `${replays.map((r) => `${r.label} ${n(r.perSecond)}/s`).join(", ")} (median of ${feed.replays[0]?.runs.length ?? 0}, ${n(feed.logRecords)} records)`,
      pass: best >= TARGETS.feedReplayPerSecond,
    },
    {
      target: `change feed live lag p99 <= ${TARGETS.feedLagP99Ms} ms, every change delivered in index order with no gap`,
      measured: `p99 ${n(live.lagP99Ms, 1)} ms (p50 ${n(live.lagP50Ms, 1)}, max ${n(live.lagMaxMs, 1)}) over ${n(live.sent)} creates at ${n(live.rate)}/s; ${n(live.arrived)} of ${n(live.sent)} arrived${live.problems.length === 0 ? " in index order, no gap" : `: ${live.problems.join("; ")}`}`,
      pass: live.lagP99Ms <= TARGETS.feedLagP99Ms && delivered,
    },
    creates === undefined
      ? {
          target: `creates with the change log on >= ${n(TARGETS.createsWithLogPerSecond)}/s`,
          measured: "not measured in this run: the creates part measures it (every create appends to the log)",
          pass: undefined,
        }
      : {
          target: `creates with the change log on >= ${n(TARGETS.createsWithLogPerSecond)}/s`,
          measured: `${n(creates.perSecond)}/s, the REST creates row (every create appends to the log)`,
          pass: creates.perSecond >= TARGETS.createsWithLogPerSecond,
        },
  ];
}

// ---------------------------------------------------------------------------------------------
// The lifecycle part (bench/lifecycle-bench.ts): the history table and both targets.

function historyTables(lifecycle: LifecycleFigures | undefined): TextTable[] {
  const history = lifecycle?.history;
  if (history === undefined) return [];
  const p95 = median(history.runs.map((r) => r.p95Ms));
  const baseline = median(history.runs.map((r) => r.baselineP95Ms));
  return [
    {
      header: [
        "History read",
        "records",
        "p50 ms",
        "p95 ms",
        "resolve p95 ms (baseline)",
        "p95 of baseline",
        "fetch + json() p50 / p95 ms",
        "runs (p95 ms)",
      ],
      rows: [
        [
          history.label,
          n(history.records),
          n(median(history.runs.map((r) => r.p50Ms)), 2),
          n(p95, 2),
          n(baseline, 2),
          n(p95 / baseline, 1),
          `${n(median(history.runs.map((r) => r.fetchP50Ms)), 2)} / ${n(median(history.runs.map((r) => r.fetchP95Ms)), 2)}`,
          history.runs.map((r) => n(r.p95Ms, 2)).join(" / "),
        ],
      ],
      numeric: new Set([1, 2, 3, 4, 5]),
    },
  ];
}

function lifecycleVerdicts(f: Figures): Verdict[] {
  const out: Verdict[] = [];
  const actions = f.lifecycle?.actions;
  if (actions !== undefined) {
    const a = summariseCreates(actions);
    const restCreates = f.creates.find((c) => c.key === "rest");
    const beside =
      restCreates === undefined
        ? ""
        : `, ${n(a.perSecond / summariseCreates(restCreates).perSecond, 2)} of REST creates' ${n(summariseCreates(restCreates).perSecond)}/s in the same run`;
    out.push({
      target: `lifecycle actions with the change log on >= ${n(TARGETS.lifecycleActionsPerSecond)}/s`,
      measured: `${n(a.perSecond)}/s over REST (deprecate and undeprecate in turn, each logged)${beside}`,
      pass: a.perSecond >= TARGETS.lifecycleActionsPerSecond,
    });
  }
  const history = f.lifecycle?.history;
  if (history !== undefined) {
    const p95 = median(history.runs.map((r) => r.p95Ms));
    const baseline = median(history.runs.map((r) => r.baselineP95Ms));
    out.push({
      target: `history of a name with ${n(history.records)} records p95 <= ${TARGETS.historyP95Ms} ms`,
      measured: `${n(p95, 2)} ms to the last byte (median of ${history.runs.length}; a resolve's p95 ${n(baseline, 2)} ms in the same loop; through fetch and json() ${n(median(history.runs.map((r) => r.fetchP95Ms)), 2)} ms)`,
      pass: p95 <= TARGETS.historyP95Ms,
    });
  }
  return out;
}
