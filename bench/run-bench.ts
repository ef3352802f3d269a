/**
 * `npm run bench`: the registry's speed on Postgres, every protocol driven by one external load
 * generator (h2load), each resolve row judged against a bare node:http or node:http2 floor started
 * in the same run, plus creates and the change feed; with --ab, the same rows against another
 * commit, alternated. `npm run bench -- --help` lists the options (bench/bench-usage.ts);
 * docs/performance.md describes the method.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createBenchDatabase, DEFAULT_ADMIN_URL, serverVersion, type BenchDatabase } from "./bench-database.js";
import { freePort, startChild, stopAllChildren, waitForHttp, waitForPort, type Child } from "./child-processes.js";
import { formatProfileSummary, summariseProfile, type ProfileSummary } from "./cpu-profile.js";
import { baseDid, createPublisher, nowToTheSecond, signedEntry, type BenchPublisher, type EntryJson } from "./entry-signer.js";
import { grpcCreateBody, grpcCreateLoad } from "./grpc-create-load.js";
import { commandLine, ensureH2load, h2loadArgs, measureH2load, warmUp, type H2loadRequest, type H2loadResult } from "./h2load.js";
import { createLoad, type CreateLoadResult } from "./http-load.js";
import { checkedAnswer, protocolRows, RESOLVE_ROW_KEYS, type ProtocolRow, type ResolveRowKey, type Target } from "./protocol-rows.js";
import { ServerSampler, type Run, type WindowUsage } from "./process-sampler.js";
import { round } from "./stats.js";
import {
  cpuMicrosPerCall,
  cpuMicrosPerRequest,
  renderMarkdown,
  renderTable,
  TARGETS,
  type CreateFigures,
  type Figures,
  type LifecycleFigures,
  type MachineInfo,
  type ResolveRowFigures,
} from "./report.js";
import { renderDiscoveryMarkdown, renderDiscoveryTable, runDiscoveryBench } from "./discovery-bench.js";
import { renderSearchMarkdown, renderSearchTable, runSearchBench } from "./search-bench.js";
import { runFeedBench } from "./feed-bench.js";
import { runStreamBench } from "./stream-bench.js";
import {
  HISTORY_RECORDS,
  prepareLifecycle,
  runHistory,
  runLifecycleLoad,
  type HistoryRun,
  type LifecycleSetup,
} from "./lifecycle-bench.js";
import { prepareAbTree, type AbTree } from "./ab-tree.js";
import { renderAbMarkdown, renderAbTable, type AbFigures } from "./ab-report.js";
import { BENCH_USAGE } from "./bench-usage.js";
import { floorKeyOf } from "./floor-targets.js";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean" },
    profile: { type: "boolean" },
    hold: { type: "boolean" },
    runs: { type: "string" },
    duration: { type: "string" },
    warmup: { type: "string" },
    "h1-connections": { type: "string" },
    "h2-connections": { type: "string" },
    "h2-streams": { type: "string" },
    "create-connections": { type: "string" },
    "create-pool": { type: "string" },
    only: { type: "string" },
    "with-rate-limit": { type: "boolean" },
    "rate-limit-redis": { type: "string" },
    "discovery-entries": { type: "string" },
    "search-entries": { type: "string" },
    "feed-records": { type: "string" },
    "feed-live": { type: "string" },
    "feed-rate": { type: "string" },
    "stream-followers": { type: "string" },
    "stream-idle": { type: "string" },
    "stream-creates": { type: "string" },
    "stream-rate": { type: "string" },
    ab: { type: "string" },
    help: { type: "boolean" },
  },
});
if (args.help === true) {
  process.stdout.write(BENCH_USAGE);
  process.exit(0);
}
if (args.ab !== undefined && (args.profile === true || args.hold === true))
  throw new Error("--ab runs the rows as measured; it does not combine with --profile or --hold");
const quick = args.quick === true;
const config = {
  runs: Number(args.runs ?? (quick || args.profile ? 1 : 3)),
  durationSeconds: Number(args.duration ?? (quick ? 3 : 5)),
  warmupSeconds: Number(args.warmup ?? 1),
  concurrency: {
    h1Connections: Number(args["h1-connections"] ?? 32),
    h2Connections: Number(args["h2-connections"] ?? 4),
    // 4 x 8 = 32 requests in flight, as REST's 32 connections: latencies compare like with like.
    h2Streams: Number(args["h2-streams"] ?? 8),
  },
  /** Creates in flight, over REST as that many connections, over gRPC spread over 4 h2c sessions. */
  createConnections: Number(args["create-connections"] ?? 64),
  createGrpcSessions: 4,
  // Enough for 2,000 creates/s over warmup + duration; a faster server gets entries signed on the fly.
  createPool: Number(args["create-pool"] ?? 12_000),
  seed: { namesWithManyVersions: 100, versionsEach: ["1.0.0", "1.1.0", "1.2.0", "2.0.0"], namesWithOneVersion: 600 },
  /** The one entry every resolve asks for, by name@version. */
  resolveName: "seed-multi-0",
  resolveVersion: "1.2.0",
};
const DISCOVERY = {
  entries: Number(args["discovery-entries"] ?? (quick ? 100_000 : 1_000_000)),
  samples: quick ? 30 : 200,
  warmup: quick ? 5 : 20,
  depth: quick ? 1_000 : 10_000,
  p95TargetMs: 25,
};

/** Issue 23: search p95 at most 25 ms at a million entries, first page and 1,000 deep. */
const SEARCH = {
  entries: Number(args["search-entries"] ?? (quick ? 100_000 : 1_000_000)),
  samples: quick ? 30 : 200,
  warmup: quick ? 5 : 20,
  depth: 1_000,
  p95TargetMs: 25,
};

const FEED = {
  minRecords: Number(args["feed-records"] ?? 20_000),
  liveCount: Number(args["feed-live"] ?? (quick ? 1_000 : 2_000)),
  liveRate: Number(args["feed-rate"] ?? 200),
};

/** The history row: sequential reads of one name's history, as the discovery rows are timed. */
const HISTORY = { samples: quick ? 50 : 200, warmup: 20 };

/** The stream part of the feed: issue 20's shapes, 500 streams following and 1,000 idle. */
const STREAMS = {
  followers: Number(args["stream-followers"] ?? 500),
  idle: Number(args["stream-idle"] ?? 1_000),
  creates: Number(args["stream-creates"] ?? (quick ? 500 : 1_000)),
  rate: Number(args["stream-rate"] ?? 100),
  sequentialCreates: quick ? 200 : 500,
};

// ---------------------------------------------------------------------------------------------
// What to run: --only names parts or single rows.

const CREATE_KEYS = ["create-rest", "create-grpc"] as const;
type CreateKey = (typeof CREATE_KEYS)[number];
/** docs/lifecycle.md's rows: signed actions per second over REST, and a 200-record history read. */
const LIFECYCLE_KEYS = ["lifecycle-rest", "history"] as const;
type LifecycleKey = (typeof LIFECYCLE_KEYS)[number];
const selection = (() => {
  const names = (args.only ?? (args.ab === undefined ? "resolve,creates,lifecycle,feed" : "resolve,creates"))
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  const rows = new Set<ResolveRowKey>();
  const creates = new Set<CreateKey>();
  const lifecycle = new Set<LifecycleKey>();
  let discovery = false;
  let search = false;
  let feed = false;
  for (const name of names) {
    if (name === "all" || name === "resolve") for (const key of RESOLVE_ROW_KEYS) rows.add(key);
    if (name === "all" || name === "creates") for (const key of CREATE_KEYS) creates.add(key);
    if (name === "all" || name === "discovery") discovery = true;
    if (name === "all" || name === "search") search = true;
    if (name === "all" || name === "feed") feed = true;
    if (name === "all" || name === "lifecycle") for (const key of LIFECYCLE_KEYS) lifecycle.add(key);
    if ((RESOLVE_ROW_KEYS as readonly string[]).includes(name)) rows.add(name as ResolveRowKey);
    else if ((CREATE_KEYS as readonly string[]).includes(name)) creates.add(name as CreateKey);
    else if ((LIFECYCLE_KEYS as readonly string[]).includes(name)) lifecycle.add(name as LifecycleKey);
    else if (!["all", "resolve", "creates", "lifecycle", "feed", "discovery", "search"].includes(name)) {
      throw new Error(
        `--only: unknown part ${name}; parts are all, resolve, creates, lifecycle, feed, discovery, search, ${[...RESOLVE_ROW_KEYS, ...CREATE_KEYS, ...LIFECYCLE_KEYS].join(", ")}`,
      );
    }
  }
  // Each row's target is read against the floor of its transport.
  for (const key of [...rows]) rows.add(floorKeyOf(protocolRows("", config.concurrency).find((row) => row.key === key)!.transport));
  const complete =
    rows.size === RESOLVE_ROW_KEYS.length && creates.size === CREATE_KEYS.length && lifecycle.size === LIFECYCLE_KEYS.length && feed;
  return { rows, creates, lifecycle, discovery, search, feed, complete };
})();

// Children are started with paths relative to the repository root.
const ROOT = fileURLToPath(new URL("..", import.meta.url));
process.chdir(ROOT);
const RESULTS = resolve(ROOT, "bench/results");
const PROFILES = join(RESULTS, "profiles");
const REQUESTS = join(RESULTS, "requests");
const LOG = join(RESULTS, "bench.log");
const H2LOAD_LOG = join(RESULTS, "h2load-requests.tsv");
const DOCS = join(ROOT, "docs/performance.md");
const adminUrl = process.env.DATABASE_URL || DEFAULT_ADMIN_URL;

function say(text: string): void {
  process.stdout.write(`${text}\n`);
}
const logH2load = (text: string) => appendFileSync(LOG, text.endsWith("\n") ? text : `${text}\n`);

function fmt(value: number, digits = 0): string {
  return Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a";
}

// ---------------------------------------------------------------------------------------------
// Cleanup: children and the database go away on success, failure and Ctrl-C alike.

/** This tree's database first, then the --ab commit's. */
const databases: BenchDatabase[] = [];
let abTree: AbTree | undefined;
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await stopAllChildren().catch(() => {});
    for (const database of databases)
      await database.drop().catch((error: unknown) => say(`could not drop ${database.name}: ${(error as Error).message}`));
    abTree?.remove();
  })();
  return cleaning;
}
let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    interrupted = true;
    say(`\n${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------
// The processes under test.

interface Server {
  readonly child: Child;
  readonly url: string;
}

/**
 * Each process profiles into its own directory under node's default file names: a process started
 * through bin/run-ts.js also runs tsx's loader thread, which writes a profile of its own, and a
 * fixed --cpu-prof-name would let it overwrite the main thread's.
 */
function profileArgs(profileName: string | undefined): string[] {
  return profileName === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", join(PROFILES, profileName)];
}

/** The main thread's profile (thread id 0 in node's file name CPU.<date>.<time>.<pid>.<tid>.<seq>), moved to <name>.cpuprofile. */
function mainThreadProfile(profileName: string): string {
  const directory = join(PROFILES, profileName);
  const main = readdirSync(directory).find((file) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(file));
  if (main === undefined) throw new Error(`no main-thread profile in ${directory}`);
  const file = join(PROFILES, `${profileName}.cpuprofile`);
  renameSync(join(directory, main), file);
  rmSync(directory, { recursive: true, force: true });
  return file;
}

/** The registry of the tree in `cwd` (this checkout, or the --ab commit's worktree). */
async function startRegistry(databaseUrl: string, profileName?: string, cwd = ROOT): Promise<Server> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    // The registry reads only its own variables; leave none of the caller's to change what is measured.
    if (
      !/^(REGISTRY_|DATABASE_|AUTH_|PUBLIC_URL|TOKEN_|CORS_|MAX_BODY|STATEMENT_TIMEOUT|RATE_LIMIT_|TRUST_PROXY|REDIS_URL|DISCOVERY_|PORT$|HOST$)/.test(
        key,
      )
    )
      env[key] = value;
  }
  // The load comes from one address and one publisher, so per-client and per-publisher limits are
  // off: they would measure refusals.
  // --with-rate-limit keeps the limiter on with a bucket no load empties, to measure what
  // deciding costs (the Postgres store: one statement per read).
  const rateLimit = args["with-rate-limit"] === true ? "1000000" : "0";
  Object.assign(env, {
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_URL: databaseUrl,
    NODE_ENV: "production",
    RATE_LIMIT_RPS: rateLimit,
    RATE_LIMIT_BURST: "1000000",
    WRITE_RATE_LIMIT_RPS: "0",
  });
  // --rate-limit-redis URL: the limiter's buckets in that Redis instead of Postgres.
  if (args["rate-limit-redis"] !== undefined) env.REDIS_URL = args["rate-limit-redis"];
  // Extra node flags for the server only, e.g. BENCH_SERVER_NODE_ARGS=--trace-gc to study memory.
  const extraArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "");
  // The production path: the compiled build that `npm start` runs (built once when the bench starts).
  const child = startChild(
    cwd === ROOT ? "registry" : `registry ${abTree?.label}`,
    [...extraArgs, ...profileArgs(profileName), "dist/src/cli/run.js", "serve"],
    { env, logFile: LOG, cwd },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/readyz`, child);
  return { child, url };
}

/** A floor: bench/baseline-server.ts (node:http) or bench/http2-baseline-server.ts, answering `bodyFile`. */
async function startFloor(target: Exclude<Target, "registry">, bodyFile: string, profileName?: string): Promise<Server> {
  const port = await freePort();
  const script = target === "http-floor" ? "bench/baseline-server.ts" : "bench/http2-baseline-server.ts";
  const child = startChild(target, [...profileArgs(profileName), "bin/run-ts.js", script, bodyFile, String(port)], { logFile: LOG });
  const url = `http://127.0.0.1:${port}`;
  if (target === "http-floor") await waitForHttp(`${url}/`, child);
  else await waitForPort(port, child);
  return { child, url };
}

async function runCli(cliArgs: readonly string[], databaseUrl: string, cwd: string): Promise<string> {
  const child = startChild("registry-cli", ["bin/registry.js", ...cliArgs], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    logFile: LOG,
    captureStdout: true,
    cwd,
  });
  const code = await child.exited;
  if (code !== 0) throw new Error(`registry ${cliArgs.join(" ")} exited with ${code} (see ${LOG})`);
  return child.stdout().trim();
}

// ---------------------------------------------------------------------------------------------
// Seeding.

interface Seeded {
  readonly publisher: BenchPublisher;
  readonly rootToken: string;
  readonly accessToken: string;
  readonly entries: number;
}

const PUBLISH_SCOPE = "registry.publish.skill";

/** 1,000 entries over REST, so the database and the read cache hold more than the one entry resolved. */
async function seed(registry: Server, databaseUrl: string, cwd: string): Promise<Seeded> {
  const publisher = createPublisher();
  const rootToken = await runCli(
    ["root-token", "create", "--subject", publisher.did, "--scopes", PUBLISH_SCOPE, "--description", "benchmark"],
    databaseUrl,
    cwd,
  );
  const accessToken = await issueAccessToken(registry, rootToken);
  const names: { name: string; versions: string[] }[] = [];
  for (let i = 0; i < config.seed.namesWithManyVersions; i++) names.push({ name: `seed-multi-${i}`, versions: config.seed.versionsEach });
  for (let i = 0; i < config.seed.namesWithOneVersion; i++) names.push({ name: `seed-single-${i}`, versions: ["1.0.0"] });
  const publishedAt = nowToTheSecond();
  let cursor = 0;
  let published = 0;
  // Sixteen publishers at a time; the versions of one name go in order.
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let item = names[cursor++]; item !== undefined; item = names[cursor++]) {
        for (const version of item.versions) {
          await postEntry(registry.url, accessToken, signedEntry(publisher, item.name, version, publishedAt));
          published++;
        }
      }
    }),
  );
  return { publisher, rootToken, accessToken, entries: published };
}

/** An access token from this server (its issuer URL includes the port, so each server needs its own). */
async function issueAccessToken(registry: Server, rootToken: string): Promise<string> {
  const response = await fetch(`${registry.url}/v1/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ scopes: [PUBLISH_SCOPE], ttlSeconds: 3600 }),
  });
  const body = (await response.json()) as { accessToken?: string };
  if (response.status !== 200 || body.accessToken === undefined) {
    throw new Error(`token issuance failed: ${response.status} ${JSON.stringify(body)}`);
  }
  return body.accessToken;
}

async function postEntry(url: string, token: string, entry: EntryJson): Promise<void> {
  const response = await fetch(`${url}/v1/entries`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(entry),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`seeding ${entry.entryDid} failed: ${response.status} ${text}`);
}

/** Fresh, distinct entries for one create run, signed (and encoded) before the clock starts. */
function signPool<T>(
  publisher: BenchPublisher,
  run: string,
  count: number,
  encode: (json: string) => T,
): { pool: T[]; more: () => T; signPerSecond: number } {
  const publishedAt = nowToTheSecond();
  const started = performance.now();
  const pool = Array.from({ length: count }, (_, i) =>
    encode(JSON.stringify(signedEntry(publisher, `bench-${run}-${i}`, "1.0.0", publishedAt))),
  );
  const signPerSecond = count / ((performance.now() - started) / 1000);
  let extra = 0;
  const more = () => encode(JSON.stringify(signedEntry(publisher, `bench-${run}-extra-${extra++}`, "1.0.0", publishedAt)));
  return { pool, more, signPerSecond };
}

// ---------------------------------------------------------------------------------------------
// One resolve row under h2load.

interface PreparedRow {
  readonly row: ProtocolRow;
  /** The request h2load sends, with the server's URL filled in at run time. */
  readonly request: (url: string) => H2loadRequest;
  readonly bodyBytes: number;
}

/** Writes the row's request body where h2load reads it (-d), relative to the repository root. */
function prepareRow(row: ProtocolRow, bodyBytes: number): PreparedRow {
  let bodyFile: string | undefined;
  if (row.body !== undefined) {
    bodyFile = relative(ROOT, join(REQUESTS, `${row.key}.bin`));
    writeFileSync(bodyFile, row.body);
  }
  return {
    row,
    bodyBytes,
    request: (url) => ({
      shape: row.shape,
      url: `${url}${row.path}`,
      headers: Object.entries(row.headers).map(([name, value]) => `${name}: ${value}`),
      ...(bodyFile === undefined ? {} : { bodyFile }),
    }),
  };
}

type ResolveRun = Run<H2loadResult>;

/**
 * Warm-up, then one measured h2load run with the server's CPU sampled around it, then the same
 * smoke request again: the server must still answer correctly after the load.
 */
async function runRow(prepared: PreparedRow, server: Server, sampler: ServerSampler, did: string): Promise<ResolveRun> {
  const request = prepared.request(server.url);
  await warmUp(request, config.warmupSeconds, logH2load);
  // h2load cannot see gRPC statuses (trailers) or gRPC-Web's (in the body): every 2xx answer is
  // held to the size of the checked answer's body.
  const record = await sampler.window(
    () => measureH2load(request, config.durationSeconds, prepared.bodyBytes, relative(ROOT, H2LOAD_LOG), logH2load),
    {
      cpuPid: server.child.pid,
      registryLoad: prepared.row.target === "registry",
    },
  );
  await checkedAnswer(server.url, prepared.row, did);
  return record;
}

function describeRun(label: string, run: number, { result, usage }: ResolveRun): string {
  const failures = result.notOk + result.shortBodies;
  return `  ${label} run ${run}: ${fmt(result.requestsPerSecond)} req/s, p99 ${fmt(result.latencyP99Ms, 1)} ms${failures === 0 ? "" : `, NOT OK ${fmt(result.notOk)} (3xx ${result.status["3xx"]}, 4xx ${result.status["4xx"]}, 5xx ${result.status["5xx"]}, errored ${result.errored}, timeout ${result.timedOut}${result.shortBodies > 0 ? `, at least ${result.shortBodies} short bodies` : ""})`}, server CPU ${fmt(usage.serverCpuPercent)}% (kernel ${fmt(usage.serverKernelPercent)}%; ${fmt(cpuMicrosPerCall({ result, usage }))} µs/call), postgres ${fmt(usage.postgresCpuPercent)}%, h2load ${fmt(usage.generatorCpuPercent)}%, CPU pressure ${fmt(usage.cpuPressurePercent)}%`;
}

// ---------------------------------------------------------------------------------------------
// Creates: REST with autocannon (http-load.ts), gRPC with grpc-create-load.ts.

type CreateRun = Run<CreateLoadResult & { readonly signPerSecond: number }>;

const CREATE_LABELS: Record<CreateKey, { label: string; generator: string }> = {
  "create-rest": { label: "REST creates, HTTP/1.1", generator: "autocannon" },
  "create-grpc": { label: "gRPC creates, h2c", generator: "bench/grpc-create-load.ts (node:http2)" },
};

/** Signs the run's entries, then loads; `measuredFrom` is when the measured part began (performance.now(), ms). */
async function runCreate(
  key: CreateKey,
  server: Server,
  sampler: ServerSampler,
  publisher: BenchPublisher,
  token: string,
  run: string,
): Promise<CreateRun & { measuredFrom: number }> {
  const shape = { url: server.url, durationSeconds: config.durationSeconds, warmupSeconds: config.warmupSeconds };
  const measureAfterMs = config.warmupSeconds * 1000;
  if (key === "create-rest") {
    const { pool, more, signPerSecond } = signPool(publisher, `rest-${run}`, config.createPool, (json) => json);
    const measuredFrom = performance.now() + measureAfterMs;
    const { result, usage } = await sampler.window(
      () => createLoad({ ...shape, connections: config.createConnections }, token, pool, more),
      { measureAfterMs },
    );
    return { result: { ...result, signPerSecond }, usage, measuredFrom };
  }
  const { pool, more, signPerSecond } = signPool(publisher, `grpc-${run}`, config.createPool, grpcCreateBody);
  const load = {
    ...shape,
    token,
    connections: config.createGrpcSessions,
    streamsPerConnection: Math.ceil(config.createConnections / config.createGrpcSessions),
  };
  const measuredFrom = performance.now() + measureAfterMs;
  const { result, usage } = await sampler.window(() => grpcCreateLoad(load, pool, more), { measureAfterMs });
  return { result: { ...result, signPerSecond }, usage, measuredFrom };
}

function describeCreate(label: string, run: number, { result, usage }: CreateRun): string {
  return `  ${label} run ${run}: ${fmt(result.requestsPerSecond)} creates/s, p99 ${fmt(result.latencyP99Ms, 1)} ms, not created ${result.notCreatedTotal}, server CPU ${fmt(usage.serverCpuPercent)}% (kernel ${fmt(usage.serverKernelPercent)}%; ${fmt(cpuMicrosPerRequest(usage.serverCpuPercent, result.requestsPerSecond))} µs/create), postgres ${fmt(usage.postgresCpuPercent)}%, generator ${fmt(usage.generatorCpuPercent)}%, RSS peak ${fmt(usage.rssPeakMb)} MB, CPU pressure ${fmt(usage.cpuPressurePercent)}% (pre-signed ${fmt(result.signPerSecond)}/s${result.signedDuringRun > 0 ? `, ${result.signedDuringRun} signed during the run: raise --create-pool` : ""})${result.failureSamples.length === 0 ? "" : `\n    not created: ${result.failureSamples.join("\n    not created: ")}`}`;
}

// ---------------------------------------------------------------------------------------------
// The measured run: every row, run after run, so drift on the machine hits each row alike.

/** A registry under test: this tree's, or with --ab the other commit's, each on a database of its own. */
interface Subject {
  readonly label: string;
  readonly cwd: string;
  readonly registry: Server;
  readonly database: BenchDatabase;
  readonly seeded: Seeded;
}

/** Each subject's figures, this tree's first; the floors run once a run, counted with this tree. */
async function measure(
  subjects: readonly Subject[],
  rowsOf: readonly (readonly PreparedRow[])[],
  floors: ReadonlyMap<Target, Server>,
  did: string,
  lifecycleSetup?: LifecycleSetup,
): Promise<Figures[]> {
  const samplers = subjects.map((subject) => new ServerSampler(subject.registry.child.pid, subject.database.name));
  for (const sampler of samplers) sampler.start();
  const resolveRuns = subjects.map(() => new Map<ResolveRowKey, ResolveRun[]>());
  const createRuns = subjects.map(() => new Map<CreateKey, CreateRun[]>());
  // This tree only, as the feed: the rows need names prepared on its server.
  const actionRuns: CreateRun[] = [];
  const historyRuns: HistoryRun[] = [];
  const push = <K, V>(map: Map<K, V[]>, key: K, value: V) => map.set(key, [...(map.get(key) ?? []), value]);
  // With --ab, this tree goes first in odd runs and second in even ones: neither always meets the machine as the other left it.
  const inTurn = (run: number) => (run % 2 === 1 ? subjects.map((_, i) => i) : subjects.map((_, i) => subjects.length - 1 - i));
  const tag = (i: number) => (subjects.length === 1 ? "" : ` [${subjects[i]!.label}]`);
  for (let run = 1; run <= config.runs; run++) {
    for (const [index, { row }] of rowsOf[0]!.entries()) {
      for (const i of row.target === "registry" ? inTurn(run) : [0]) {
        const server = row.target === "registry" ? subjects[i]!.registry : floors.get(row.target)!;
        const record = await runRow(rowsOf[i]![index]!, server, samplers[i]!, did);
        push(resolveRuns[i]!, row.key, record);
        say(describeRun(`${row.label}${row.target === "registry" ? tag(i) : ""}`, run, record));
      }
    }
  }
  for (let run = 1; run <= config.runs; run++) {
    for (const key of selection.creates) {
      for (const i of inTurn(run)) {
        const { registry, seeded } = subjects[i]!;
        const { measuredFrom: _, ...record } = await runCreate(
          key,
          registry,
          samplers[i]!,
          seeded.publisher,
          seeded.accessToken,
          `r${run}-${Date.now().toString(36)}`,
        );
        push(createRuns[i]!, key, record);
        say(describeCreate(`${CREATE_LABELS[key].label}${tag(i)}`, run, record));
      }
    }
    // In the same round as the creates, so the machine's drift hits them alike.
    if (lifecycleSetup !== undefined) {
      const { registry, seeded } = subjects[0]!;
      if (selection.lifecycle.has("lifecycle-rest")) {
        const record = await runLifecycle(registry, samplers[0]!, seeded.accessToken, lifecycleSetup);
        actionRuns.push(record);
        say(describeCreate(LIFECYCLE_LABEL, run, record).replace(" creates/s", " actions/s").replace("µs/create", "µs/action"));
      }
      if (selection.lifecycle.has("history")) {
        const record = await runHistory(registry.url, lifecycleSetup, HISTORY.samples, HISTORY.warmup);
        historyRuns.push(record);
        say(
          `  ${HISTORY_LABEL} run ${run}: p50 ${fmt(record.p50Ms, 2)} ms, p95 ${fmt(record.p95Ms, 2)} ms to the last byte (fetch + json() p50 ${fmt(record.fetchP50Ms, 2)}, p95 ${fmt(record.fetchP95Ms, 2)} ms); resolve p50 ${fmt(record.baselineP50Ms, 2)} ms, p95 ${fmt(record.baselineP95Ms, 2)} ms (${record.samples} calls each, one at a time)`,
        );
      }
    }
  }
  const lifecycle: LifecycleFigures = {
    ...(actionRuns.length === 0 ? {} : { actions: { label: LIFECYCLE_LABEL, generator: "autocannon", runs: actionRuns } }),
    ...(historyRuns.length === 0 ? {} : { history: { label: HISTORY_LABEL, records: HISTORY_RECORDS, runs: historyRuns } }),
  };
  return subjects.map((subject, i): Figures => {
    samplers[i]!.stop();
    const rss = [...samplers[i]!.loadSamples()].sort((a, b) => a - b);
    const serverOf = (target: Target) => (target === "registry" ? subject.registry : floors.get(target)!);
    return {
      resolves: rowsOf[i]!.filter(({ row }) => resolveRuns[i]!.has(row.key)).map(
        ({ row, bodyBytes }): ResolveRowFigures => ({
          key: row.key,
          label: row.label,
          rpc: row.rpc,
          target: row.target,
          transport: row.transport,
          bodyBytes,
          command: resolveRuns[i]!.get(row.key)![0]!.result.command.replace(serverOf(row.target).url, "http://127.0.0.1:$PORT"),
          runs: resolveRuns[i]!.get(row.key)!,
        }),
      ),
      creates: [...selection.creates].map(
        (key): CreateFigures => ({ key: key === "create-rest" ? "rest" : "grpc", ...CREATE_LABELS[key], runs: createRuns[i]!.get(key)! }),
      ),
      rss: { peakMb: rss.at(-1) ?? Number.NaN, medianMb: rss[Math.floor(rss.length / 2)] ?? Number.NaN, samples: rss.length },
      ...(i === 0 && lifecycleSetup !== undefined ? { lifecycle } : {}),
    };
  });
}

const LIFECYCLE_LABEL = "REST lifecycle actions, HTTP/1.1";
const HISTORY_LABEL = `history of a name with ${HISTORY_RECORDS} records, REST`;

/** Signs the run's requests before the clock starts, then loads as the REST creates do. */
async function runLifecycle(
  server: Server,
  sampler: ServerSampler,
  token: string,
  setup: LifecycleSetup,
): Promise<CreateRun & { measuredFrom: number }> {
  const shape = { url: server.url, durationSeconds: config.durationSeconds, warmupSeconds: config.warmupSeconds };
  const measureAfterMs = config.warmupSeconds * 1000;
  const measuredFrom = performance.now() + measureAfterMs;
  const run = await sampler.window(
    () => runLifecycleLoad({ ...shape, connections: config.createConnections }, token, setup, config.createPool),
    { measureAfterMs },
  );
  return { ...run, measuredFrom };
}

// ---------------------------------------------------------------------------------------------
// Profile mode: a fresh server under --cpu-prof per row.

async function profile(
  databaseUrl: string,
  rows: readonly PreparedRow[],
  floorBodies: ReadonlyMap<Target, string>,
  seeded: Seeded,
  did: string,
  lifecycleSetup: LifecycleSetup | undefined,
): Promise<Record<string, ProfileSummary>> {
  rmSync(PROFILES, { recursive: true, force: true });
  mkdirSync(PROFILES, { recursive: true });
  const summaries: Record<string, ProfileSummary> = {};
  const start = (target: Target, name: string) =>
    target === "registry" ? startRegistry(databaseUrl, name) : startFloor(target, floorBodies.get(target)!, name);
  const profiled = async (
    name: string,
    target: Target,
    load: (server: Server, sampler: ServerSampler) => Promise<{ text: string; perSecond: number; usage: WindowUsage; fromSeconds: number }>,
  ) => {
    const spawned = performance.now();
    const server = await start(target, name);
    const sampler = new ServerSampler(server.child.pid, databases[0]!.name);
    const { text, perSecond, usage, fromSeconds } = await load(server, sampler);
    // The profile starts with the process; keep only the samples of the measured load.
    const loadStart = fromSeconds - spawned / 1000 + 0.3;
    const loadEnd = (performance.now() - spawned) / 1000 - 0.3;
    const exit = await server.child.stop(20_000);
    if (exit !== 0) throw new Error(`profiled ${name} exited with ${exit}; no profile written`);
    const file = mainThreadProfile(name);
    summaries[name] = summariseProfile(file, ROOT, 25, { fromSeconds: loadStart, toSeconds: loadEnd });
    say(
      `\n${name}: ${text}; server CPU ${fmt(usage.serverCpuPercent)}% (kernel ${fmt(usage.serverKernelPercent)}%; ${fmt(cpuMicrosPerRequest(usage.serverCpuPercent, perSecond))} µs per request), postgres CPU ${fmt(usage.postgresCpuPercent)}%, CPU pressure ${fmt(usage.cpuPressurePercent)}%, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
    );
    say(formatProfileSummary(`${name} (${file})`, summaries[name]!));
  };

  for (const prepared of rows) {
    await profiled(prepared.row.key, prepared.row.target, async (server, sampler) => {
      await checkedAnswer(server.url, prepared.row, did);
      const request = prepared.request(server.url);
      await warmUp(request, config.warmupSeconds, logH2load);
      const fromSeconds = performance.now() / 1000;
      const { result, usage } = await sampler.window(() =>
        measureH2load(request, config.durationSeconds, prepared.bodyBytes, relative(ROOT, H2LOAD_LOG), logH2load),
      );
      return {
        text: `${fmt(result.requestsPerSecond)} req/s, p99 ${fmt(result.latencyP99Ms, 1)} ms, not OK ${result.notOk + result.shortBodies}`,
        perSecond: result.requestsPerSecond,
        usage,
        fromSeconds,
      };
    });
  }
  for (const key of selection.creates) {
    await profiled(key, "registry", async (server, sampler) => {
      const token = await issueAccessToken(server, seeded.rootToken);
      const { result, usage, measuredFrom } = await runCreate(
        key,
        server,
        sampler,
        seeded.publisher,
        token,
        `p-${Date.now().toString(36)}`,
      );
      return {
        text: `${fmt(result.requestsPerSecond)} creates/s, p99 ${fmt(result.latencyP99Ms, 1)} ms, not created ${result.notCreatedTotal}`,
        perSecond: result.requestsPerSecond,
        usage,
        fromSeconds: measuredFrom / 1000,
      };
    });
  }
  if (lifecycleSetup !== undefined) {
    await profiled("lifecycle-rest", "registry", async (server, sampler) => {
      const { result, usage, measuredFrom } = await runLifecycle(
        server,
        sampler,
        await issueAccessToken(server, seeded.rootToken),
        lifecycleSetup,
      );
      return {
        text: `${fmt(result.requestsPerSecond)} actions/s, p99 ${fmt(result.latencyP99Ms, 1)} ms, not done ${result.notCreatedTotal}`,
        perSecond: result.requestsPerSecond,
        usage,
        fromSeconds: measuredFrom / 1000,
      };
    });
  }
  return summaries;
}

// ---------------------------------------------------------------------------------------------

/** Which code was measured: the commit, and any uncommitted changes to what the server runs. */
function codeState(): { commit: string; uncommitted: string[] } {
  const git = (...gitArgs: string[]) => {
    try {
      // trimEnd: porcelain lines start with a space (" M file") that must stay.
      return execFileSync("git", gitArgs, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trimEnd();
    } catch {
      return "";
    }
  };
  const uncommitted = git("status", "--porcelain", "--", "src", "gen", "bin", "package.json", "package-lock.json")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => line.slice(3));
  return { commit: git("rev-parse", "--short", "HEAD") || "unknown (not a git checkout)", uncommitted };
}

async function main(): Promise<void> {
  mkdirSync(REQUESTS, { recursive: true });
  writeFileSync(LOG, "");
  const h2load = selection.rows.size > 0 ? ensureH2load(say) : "h2load not used";
  if (args.ab !== undefined) abTree = prepareAbTree(ROOT, args.ab, say);
  // Measure what `npm start` runs: the compiled build, brought up to date first.
  execFileSync("npm", ["run", "-s", "build"], { cwd: ROOT, stdio: "inherit" });
  const started = Date.now();
  const machine: MachineInfo = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    memoryGb: round(os.totalmem() / 1024 ** 3, 1),
    node: process.version,
    postgres: await serverVersion(adminUrl),
    h2load,
    loadAverageAtStart: os.loadavg().map((l) => round(l, 2)),
    code: codeState(),
    entryCacheSize: process.env.ENTRY_CACHE_SIZE ?? "default",
  };
  say(
    `registry benchmark: ${machine.cpus} CPUs (${machine.cpuModel}), Node ${machine.node}, Postgres ${machine.postgres}, ${h2load}; load average ${machine.loadAverageAtStart.join(" ")}`,
  );
  say(
    `  code: ${machine.code.commit}${machine.code.uncommitted.length === 0 ? "" : ` with uncommitted changes to ${machine.code.uncommitted.join(", ")}`}; ENTRY_CACHE_SIZE ${machine.entryCacheSize}`,
  );
  say(
    `  ${config.runs} run(s) of ${config.durationSeconds} s (after a ${config.warmupSeconds} s warm-up) each; HTTP/1.1 ${config.concurrency.h1Connections} connections, h2c ${config.concurrency.h2Connections} connections x ${config.concurrency.h2Streams} streams, creates ${config.createConnections} in flight; child logs in ${LOG}`,
  );

  if (selection.rows.size > 0 || selection.creates.size > 0 || selection.lifecycle.size > 0 || selection.feed)
    await protocolPhases(machine, started);
  if (selection.discovery && args.profile !== true) await discoveryPhase(machine);
  if (selection.search && args.profile !== true) await searchPhase(machine);
}

/** Keeps the seeded registry up for study by hand, until Ctrl-C (which drops the database). */
async function hold(registry: Server, rows: readonly PreparedRow[]): Promise<void> {
  say(`\nholding the registry (pid ${registry.child.pid}) at ${registry.url}; Ctrl-C stops it and drops the database`);
  for (const prepared of rows.filter((p) => p.row.target === "registry")) {
    say(`  ${prepared.row.key}: ${commandLine(h2loadArgs(prepared.request(registry.url), config.durationSeconds))}`);
  }
  await new Promise<never>(() => {});
}

/** A fresh database, the registry of the tree in `cwd` on it, seeded. */
async function startSubject(label: string, cwd: string): Promise<Subject> {
  const database = await createBenchDatabase(adminUrl);
  databases.push(database);
  const registry = await startRegistry(database.url, undefined, cwd);
  const seeded = await seed(registry, database.url, cwd);
  say(`  ${label}: registry pid ${registry.child.pid} at ${registry.url}, database ${database.name}, seeded ${seeded.entries} entries`);
  return { label, cwd, registry, database, seeded };
}

/** Each selected row, its body size that of `registry`'s checked answer (the floors answer REST's and gRPC's). */
async function checkedRows(registry: Server, did: string): Promise<{ rows: PreparedRow[]; answers: Map<ResolveRowKey, Buffer> }> {
  const allRows = protocolRows(did, config.concurrency);
  const answers = new Map<ResolveRowKey, Buffer>();
  for (const row of allRows.filter((r) => r.target === "registry" && (selection.rows.has(r.key) || r.key === "rest" || r.key === "grpc"))) {
    answers.set(row.key, (await checkedAnswer(registry.url, row, did)).body);
  }
  answers.set("floor-http", answers.get("rest")!);
  answers.set("floor-http2", answers.get("grpc")!);
  const rows = RESOLVE_ROW_KEYS.filter((key) => selection.rows.has(key)).map((key) =>
    prepareRow(allRows.find((row) => row.key === key)!, answers.get(key)!.length),
  );
  return { rows, answers };
}

/** Resolves on every protocol against the floors, creates over REST and gRPC, memory, then the change feed. */
async function protocolPhases(machine: MachineInfo, started: number): Promise<void> {
  const current = await startSubject(`${machine.code.commit}${machine.code.uncommitted.length === 0 ? "" : "+changes"}`, ROOT);
  const { registry, seeded, database } = current;
  const did = `${baseDid(config.resolveName)}@${config.resolveVersion}`;
  say(`  every resolve asks for ${did}`);

  // One checked answer per protocol before any load; the floors answer the REST and gRPC bodies.
  const { rows, answers } = await checkedRows(registry, did);
  const floorBodies = new Map<Target, string>([
    ["http-floor", join(RESULTS, "floor-http-body.json")],
    ["http2-floor", join(RESULTS, "floor-http2-body.bin")],
  ]);
  writeFileSync(floorBodies.get("http-floor")!, answers.get("rest")!);
  writeFileSync(floorBodies.get("http2-floor")!, answers.get("grpc")!);
  say(`  checked one answer per protocol: ${rows.map((p) => `${p.row.key} ${p.bodyBytes} B`).join(", ")}`);

  if (args.hold === true) return hold(registry, rows);

  if (args.profile === true) {
    // Prepared on the seeding server, which is then stopped: the profiled one starts on the same database.
    const lifecycleSetup = selection.lifecycle.has("lifecycle-rest")
      ? await prepareLifecycle(registry.url, await issueAccessToken(registry, seeded.rootToken), seeded.publisher, Date.now().toString(36))
      : undefined;
    await registry.child.stop();
    const summaries = await profile(database.url, rows, floorBodies, seeded, did, lifecycleSetup);
    writeFileSync(
      join(RESULTS, "profile-latest.json"),
      JSON.stringify({ date: new Date().toISOString(), machine, config, summaries }, null, 2),
    );
    say(`\nwrote ${join(RESULTS, "profile-latest.json")} and the .cpuprofile files in ${PROFILES} (open them in Chrome DevTools)`);
    return;
  }

  const subjects = [current];
  const rowsOf = [rows];
  if (abTree !== undefined) {
    const other = await startSubject(abTree.label, abTree.dir);
    subjects.push(other);
    rowsOf.push((await checkedRows(other.registry, did)).rows);
  }

  const floors = new Map<Target, Server>();
  for (const target of ["http-floor", "http2-floor"] as const) {
    const prepared = rows.find((p) => p.row.target === target);
    if (prepared === undefined) continue;
    const floor = await startFloor(target, floorBodies.get(target)!);
    await checkedAnswer(floor.url, prepared.row, did);
    floors.set(target, floor);
    say(`  ${target} pid ${floor.child.pid} at ${floor.url}`);
  }

  // A fresh token: the seed's may be minutes old by the last run.
  const lifecycleSetup =
    selection.lifecycle.size === 0
      ? undefined
      : await prepareLifecycle(registry.url, await issueAccessToken(registry, seeded.rootToken), seeded.publisher, Date.now().toString(36));
  if (lifecycleSetup !== undefined)
    say(`  lifecycle: names prepared; history of ${lifecycleSetup.historyDid} holds ${HISTORY_RECORDS} records`);

  say("");
  const [measured, otherMeasured] = await measure(subjects, rowsOf, floors, did, lifecycleSetup);
  // After the creates, so the log holds the seed plus every create of the create runs.
  const figures = selection.feed ? { ...measured!, feed: await feedPart(current), streams: await streamPart(current) } : measured!;
  const ab: AbFigures | undefined =
    otherMeasured === undefined
      ? undefined
      : { current: { label: current.label, ...figures }, other: { label: subjects[1]!.label, ...otherMeasured } };
  const date = new Date().toISOString();
  const report = {
    date,
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l, 2)) },
    config,
    targets: TARGETS,
    resolvedDid: did,
    seededEntries: seeded.entries,
    figures,
    ...(ab === undefined ? {} : { ab: { other: ab.other.label, figures: otherMeasured } }),
    elapsedSeconds: round((Date.now() - started) / 1000),
  };
  writeFileSync(join(RESULTS, "latest.json"), JSON.stringify(report, null, 2));
  say("");
  say(renderTable(figures));
  if (ab !== undefined) say(`\n${renderAbTable(ab)}`);
  const markdown = [renderMarkdown(figures, date, machine, config), ...(ab === undefined ? [] : [renderAbMarkdown(ab)])].join("\n\n");
  say("\nMarkdown for docs/performance.md:\n");
  say(markdown);
  const fullRun = selection.complete && !quick && config.runs >= 3 && args["with-rate-limit"] !== true && ab === undefined;
  if (fullRun) {
    writeDocsSection(markdown);
    say(`\nwrote the table into ${relative(ROOT, DOCS)}`);
  } else {
    say(
      `\n(not written to ${relative(ROOT, DOCS)}: only a full run of every row, both creates, both lifecycle rows and the feed, 3 runs or more, without --quick, --ab or a rate limit, is)`,
    );
  }
  say(`wrote ${join(RESULTS, "latest.json")} (${report.elapsedSeconds} s)`);
}

/** The change feed's replays and live lag against the registry under test (bench/feed-bench.ts). */
async function feedPart({ registry, seeded, database }: Subject) {
  say("");
  return runFeedBench({
    url: registry.url,
    serverPid: registry.child.pid,
    databaseName: database.name,
    publisher: seeded.publisher,
    // A fresh token: the seed's may be minutes old by now.
    accessToken: await issueAccessToken(registry, seeded.rootToken),
    runs: config.runs,
    ...FEED,
    say,
  });
}

/** Many feed streams at once against the registry under test (bench/stream-bench.ts). */
async function streamPart({ registry, seeded }: Subject) {
  say("");
  return runStreamBench({
    url: registry.url,
    serverPid: registry.child.pid,
    publisher: seeded.publisher,
    accessToken: await issueAccessToken(registry, seeded.rootToken),
    ...STREAMS,
    say,
  });
}

const DOCS_START = "<!-- bench:protocols:start (written by npm run bench) -->";
const DOCS_END = "<!-- bench:protocols:end -->";

/** Replaces the generated part of the "Every protocol under one generator" section. */
function writeDocsSection(markdown: string): void {
  const text = readFileSync(DOCS, "utf8");
  const from = text.indexOf(DOCS_START);
  const to = text.indexOf(DOCS_END);
  if (from < 0 || to < from) throw new Error(`${DOCS} has no ${DOCS_START} ... ${DOCS_END} block to write into`);
  writeFileSync(DOCS, `${text.slice(0, from + DOCS_START.length)}\n\n${markdown}\n\n${text.slice(to)}`);
}

/** Discovery latency at a million entries (bench/discovery-bench.ts). */
async function discoveryPhase(machine: MachineInfo): Promise<void> {
  say("");
  const figures = await runDiscoveryBench({ adminUrl, ...DISCOVERY, logFile: LOG, say });
  writeFileSync(
    join(RESULTS, "discovery-latest.json"),
    JSON.stringify({ date: new Date().toISOString(), machine, config: DISCOVERY, figures }, null, 2),
  );
  say("");
  say(renderDiscoveryTable(figures, DISCOVERY));
  say("\nMarkdown for docs/performance.md:\n");
  say(renderDiscoveryMarkdown(figures, DISCOVERY));
  say(`\nwrote ${join(RESULTS, "discovery-latest.json")}`);
}

/** Ranked search latency at a million entries (bench/search-bench.ts). */
async function searchPhase(machine: MachineInfo): Promise<void> {
  say("");
  const figures = await runSearchBench({ adminUrl, ...SEARCH, logFile: LOG, say }, () => os.loadavg().map((l) => round(l, 2)));
  writeFileSync(
    join(RESULTS, "search-latest.json"),
    JSON.stringify({ date: new Date().toISOString(), machine, config: SEARCH, figures }, null, 2),
  );
  say("");
  say(renderSearchTable(figures, SEARCH));
  say("\nMarkdown for docs/performance.md:\n");
  say(renderSearchMarkdown(figures, SEARCH));
  say(`\nwrote ${join(RESULTS, "search-latest.json")}`);
}

try {
  await main();
} catch (error) {
  process.exitCode = 1;
  if (!interrupted) say(`benchmark failed: ${(error as Error).stack ?? String(error)}`);
} finally {
  await cleanup();
}
