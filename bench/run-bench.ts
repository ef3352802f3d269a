/**
 * `npm run bench`: the registry's speed on Postgres, measured against a bare node:http floor on
 * the same machine. See docs/performance.md for the method.
 *
 *   npm run bench                      the full run (about 3-4 minutes)
 *   npm run bench -- --quick           1 run of each, 3 s each: a smoke test, not figures to quote
 *   BENCH_SERVER_NODE_ARGS=--trace-gc npm run bench   extra node flags for the server process
 *   npm run bench -- --only resolve|discovery   one part only
 *   npm run bench -- --with-rate-limit the resolve part with the read limiter on (a bucket no load
 *                                      empties), to measure what the limiter costs; add
 *                                      --rate-limit-redis redis://127.0.0.1:6379 for the Redis store
 *   npm run bench -- --profile         one run per phase with `node --cpu-prof` on the server,
 *                                      and a summary of where its CPU time went
 *
 * Figures go to bench/results/latest.json (profiles to bench/results/profiles/ and
 * profile-latest.json); the children's output to bench/results/bench.log.
 *
 * Options: --runs N, --duration S, --warmup S, --rest-connections N, --grpc-concurrency N,
 * --create-connections N, --create-pool N. DATABASE_URL names the Postgres server (admin URL;
 * default postgres://postgres@127.0.0.1:5432/test); a fresh database is created and dropped.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createBenchDatabase, DEFAULT_ADMIN_URL, serverVersion, type BenchDatabase } from "./bench-database.js";
import { freePort, startChild, stopAllChildren, waitForHttp, type Child } from "./child-processes.js";
import { formatProfileSummary, summariseProfile, type ProfileSummary } from "./cpu-profile.js";
import {
  baseDid,
  createPublisher,
  nowToTheSecond,
  signedEntry,
  type BenchPublisher,
  type EntryJson,
} from "./entry-signer.js";
import type { GrpcLoadConfig, GrpcLoadResult } from "./grpc-load.js";
import { createLoad, resolveLoad, type CreateLoadResult, type HttpLoadResult } from "./http-load.js";
import { ServerSampler, type WindowUsage } from "./process-sampler.js";
import { median, round, seededRandom, shuffle } from "./stats.js";
import { renderMarkdown, renderTable, type Figures, type MachineInfo } from "./report.js";
import { renderDiscoveryMarkdown, renderDiscoveryTable, runDiscoveryBench } from "./discovery-bench.js";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean" },
    profile: { type: "boolean" },
    runs: { type: "string" },
    duration: { type: "string" },
    warmup: { type: "string" },
    "rest-connections": { type: "string" },
    "grpc-concurrency": { type: "string" },
    "create-connections": { type: "string" },
    "create-pool": { type: "string" },
    only: { type: "string" },
    "with-rate-limit": { type: "boolean" },
    "rate-limit-redis": { type: "string" },
    "discovery-entries": { type: "string" },
  },
});
const only = args.only ?? "all";
if (!["all", "resolve", "discovery"].includes(only)) throw new Error("--only is resolve or discovery");
const quick = args.quick === true;
const config = {
  runs: Number(args.runs ?? (quick || args.profile ? 1 : 3)),
  durationSeconds: Number(args.duration ?? (quick ? 3 : 10)),
  warmupSeconds: Number(args.warmup ?? 1),
  restConnections: Number(args["rest-connections"] ?? 32),
  grpcConcurrency: Number(args["grpc-concurrency"] ?? 64),
  createConnections: Number(args["create-connections"] ?? 64),
  // Enough for 1,000 creates/s over warmup + duration; a faster server gets entries signed on the fly.
  createPool: Number(args["create-pool"] ?? 12_000),
  seed: { namesWithManyVersions: 100, versionsEach: ["1.0.0", "1.1.0", "1.2.0", "2.0.0"], namesWithOneVersion: 600 },
  resolvePaths: 2_000,
};
const TARGETS = { restRatio: 0.5, createsPerSecond: 1_000, rssMb: 250 } as const;
const DISCOVERY = {
  entries: Number(args["discovery-entries"] ?? (quick ? 100_000 : 1_000_000)),
  samples: quick ? 30 : 200,
  warmup: quick ? 5 : 20,
  depth: quick ? 1_000 : 10_000,
  p95TargetMs: 25,
};

// Children are started with paths relative to the repository root.
const ROOT = fileURLToPath(new URL("..", import.meta.url));
process.chdir(ROOT);
const RESULTS = resolve(ROOT, "bench/results");
const PROFILES = join(RESULTS, "profiles");
const LOG = join(RESULTS, "bench.log");
const adminUrl = process.env.DATABASE_URL || DEFAULT_ADMIN_URL;

function say(text: string): void {
  process.stdout.write(`${text}\n`);
}

// ---------------------------------------------------------------------------------------------
// Cleanup: children and the database go away on success, failure and Ctrl-C alike.

let database: BenchDatabase | undefined;
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await stopAllChildren().catch(() => {});
    await database?.drop().catch((error: unknown) => say(`could not drop ${database?.name}: ${(error as Error).message}`));
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

interface Registry {
  readonly child: Child;
  readonly url: string;
  readonly port: number;
}

async function startRegistry(databaseUrl: string, profileName?: string): Promise<Registry> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    // The registry reads only its own variables; leave none of the caller's to change what is measured.
    if (!/^(REGISTRY_|DATABASE_|AUTH_|PUBLIC_URL|TOKEN_|CORS_|MAX_BODY|STATEMENT_TIMEOUT|RATE_LIMIT_|TRUST_PROXY|REDIS_URL|DISCOVERY_|PORT$|HOST$)/.test(key)) env[key] = value;
  }
  // The load comes from one address, so per-client limits are off: they would measure refusals.
  // --with-rate-limit keeps the limiter on with a bucket no load empties, to measure what
  // deciding costs (the Postgres store: one statement per read).
  const rateLimit = args["with-rate-limit"] === true ? "1000000" : "0";
  Object.assign(env, { PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: databaseUrl, NODE_ENV: "production", RATE_LIMIT_RPS: rateLimit, RATE_LIMIT_BURST: "1000000" });
  // --rate-limit-redis URL: the limiter's buckets in that Redis instead of Postgres.
  if (args["rate-limit-redis"] !== undefined) env.REDIS_URL = args["rate-limit-redis"];
  const nodeArgs =
    profileName === undefined
      ? []
      : ["--cpu-prof", "--cpu-prof-dir", PROFILES, "--cpu-prof-name", `${profileName}.cpuprofile`];
  // Extra node flags for the server only, e.g. BENCH_SERVER_NODE_ARGS=--trace-gc to study memory.
  const extraArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "");
  // The production path: the compiled build that `npm start` runs (built once when the bench starts).
  const child = startChild("registry", [...extraArgs, ...nodeArgs, "dist/src/cli/run.js", "serve"], { env, logFile: LOG });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/readyz`, child);
  return { child, url, port };
}

async function startBaseline(bodyFile: string, profileName?: string): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const nodeArgs =
    profileName === undefined
      ? []
      : ["--cpu-prof", "--cpu-prof-dir", PROFILES, "--cpu-prof-name", `${profileName}.cpuprofile`];
  const child = startChild("baseline", [...nodeArgs, "bin/run-ts.js", "bench/baseline-server.ts", bodyFile, String(port)], {
    logFile: LOG,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/`, child);
  return { child, url };
}

async function runCli(args: readonly string[], databaseUrl: string): Promise<string> {
  const child = startChild("registry-cli", ["bin/registry.js", ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    logFile: LOG,
    captureStdout: true,
  });
  const code = await child.exited;
  if (code !== 0) throw new Error(`registry ${args.join(" ")} exited with ${code} (see ${LOG})`);
  return child.stdout().trim();
}

// ---------------------------------------------------------------------------------------------
// Seeding.

interface Seeded {
  readonly publisher: BenchPublisher;
  readonly rootToken: string;
  readonly accessToken: string;
  /** REST paths for resolves: half latest (no @version), half a specific version. */
  readonly restPaths: string[];
  /** The same mix as DIDs, for gRPC. */
  readonly dids: string[];
  readonly entries: number;
}

async function seed(registry: Registry, databaseUrl: string): Promise<Seeded> {
  const publisher = createPublisher();
  const rootToken = await runCli(
    ["root-token", "create", "--subject", publisher.did, "--scopes", PUBLISH_SCOPE, "--description", "benchmark"],
    databaseUrl,
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

  const random = seededRandom(42);
  const allVersions = names.flatMap(({ name, versions }) => versions.map((version) => `${baseDid(name)}@${version}`));
  const half = config.resolvePaths / 2;
  const dids = shuffle(
    [
      ...Array.from({ length: half }, () => baseDid(names[Math.floor(random() * names.length)]!.name)),
      ...Array.from({ length: half }, () => allVersions[Math.floor(random() * allVersions.length)]!),
    ],
    random,
  );
  const restPaths = dids.map((did) => `/v1/entries/${encodeURIComponent(did)}`);
  return { publisher, rootToken, accessToken, restPaths, dids, entries: published };
}

const PUBLISH_SCOPE = "registry.publish.skill";

/** An access token from this server (its issuer URL includes the port, so each server needs its own). */
async function issueAccessToken(registry: Registry, rootToken: string): Promise<string> {
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

/** Fresh, distinct entries for one create run, signed before the clock starts. */
function signPool(publisher: BenchPublisher, run: string, count: number): { pool: string[]; more: () => string; signPerSecond: number } {
  const publishedAt = nowToTheSecond();
  const started = performance.now();
  const pool = Array.from({ length: count }, (_, i) => JSON.stringify(signedEntry(publisher, `bench-${run}-${i}`, "1.0.0", publishedAt)));
  const signPerSecond = count / ((performance.now() - started) / 1000);
  let extra = 0;
  const more = () => JSON.stringify(signedEntry(publisher, `bench-${run}-extra-${extra++}`, "1.0.0", publishedAt));
  return { pool, more, signPerSecond };
}

// ---------------------------------------------------------------------------------------------
// gRPC load runs in its own process.

async function grpcLoad(registry: Registry, dids: readonly string[]): Promise<GrpcLoadResult> {
  const loadConfig: GrpcLoadConfig = {
    address: `127.0.0.1:${registry.port}`,
    dids,
    concurrency: config.grpcConcurrency,
    warmupMs: config.warmupSeconds * 1000,
    durationMs: config.durationSeconds * 1000,
    serverPid: registry.child.pid,
    database: database!.name,
  };
  const child = startChild("grpc-load", ["bin/run-ts.js", "bench/grpc-load.ts"], {
    env: { ...process.env, BENCH_GRPC_CONFIG: JSON.stringify(loadConfig) },
    logFile: LOG,
    captureStdout: true,
  });
  const code = await child.exited;
  const line = child.stdout().trim().split("\n").at(-1) ?? "";
  if (code !== 0 || line === "") throw new Error(`grpc-load exited with ${code} (see ${LOG})`);
  return JSON.parse(line) as GrpcLoadResult;
}

// ---------------------------------------------------------------------------------------------
// The measured run.

interface RunRecord<T> {
  readonly result: T;
  readonly usage: WindowUsage;
}

function cpuMicrosPerRequest(cpuPercent: number, perSecond: number): number {
  return (cpuPercent / 100 / perSecond) * 1e6;
}

function fmt(value: number, digits = 0): string {
  return Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a";
}

async function measure(registry: Registry, seeded: Seeded, baselineUrl: string, baselineChild: Child): Promise<Figures> {
  const sampler = new ServerSampler(registry.child.pid, database!.name);
  sampler.start();
  const http = (url: string, connections: number) => ({
    url,
    connections,
    durationSeconds: config.durationSeconds,
    warmupSeconds: config.warmupSeconds,
  });

  const baselineRuns: RunRecord<HttpLoadResult>[] = [];
  const restRuns: RunRecord<HttpLoadResult>[] = [];
  for (let run = 1; run <= config.runs; run++) {
    const baseline = await sampler.window(() => resolveLoad(http(baselineUrl, config.restConnections), seeded.restPaths), {
      cpuPid: baselineChild.pid,
      registryLoad: false,
    });
    baselineRuns.push(baseline);
    say(`  baseline run ${run}: ${fmt(baseline.result.requestsPerSecond)} req/s, p99 ${fmt(baseline.result.latencyP99Ms, 1)} ms, server CPU ${fmt(baseline.usage.serverCpuPercent)}% (kernel ${fmt(baseline.usage.serverKernelPercent)}%), generator CPU ${fmt(baseline.usage.generatorCpuPercent)}%, CPU pressure ${fmt(baseline.usage.cpuPressurePercent)}%`);
    const rest = await sampler.window(() => resolveLoad(http(registry.url, config.restConnections), seeded.restPaths));
    restRuns.push(rest);
    say(`  REST resolve run ${run}: ${fmt(rest.result.requestsPerSecond)} req/s, p99 ${fmt(rest.result.latencyP99Ms, 1)} ms, failures ${rest.result.failures}, server CPU ${fmt(rest.usage.serverCpuPercent)}% (kernel ${fmt(rest.usage.serverKernelPercent)}%), postgres CPU ${fmt(rest.usage.postgresCpuPercent)}%, generator CPU ${fmt(rest.usage.generatorCpuPercent)}%, RSS peak ${fmt(rest.usage.rssPeakMb)} MB, CPU pressure ${fmt(rest.usage.cpuPressurePercent)}%`);
  }

  const grpcRuns: RunRecord<GrpcLoadResult>[] = [];
  for (let run = 1; run <= config.runs; run++) {
    const grpc = await sampler.window(() => grpcLoad(registry, seeded.dids));
    grpcRuns.push(grpc);
    const failures = Object.values(grpc.result.errors).reduce((a, b) => a + b, 0);
    say(`  gRPC resolve run ${run}: ${fmt(grpc.result.requestsPerSecond)} req/s, p99 ${fmt(grpc.result.latencyP99Ms, 1)} ms, failures ${failures}, server CPU ${fmt(grpc.result.serverCpuPercent)}% (kernel ${fmt(grpc.result.serverKernelPercent)}%), postgres CPU ${fmt(grpc.result.postgresCpuPercent)}%, client CPU ${fmt(grpc.result.generatorCpuPercent)}%, RSS peak ${fmt(grpc.usage.rssPeakMb)} MB, CPU pressure ${fmt(grpc.result.cpuPressurePercent)}%`);
  }

  const createRuns: RunRecord<CreateLoadResult & { signPerSecond: number }>[] = [];
  for (let run = 1; run <= config.runs; run++) {
    const { pool, more, signPerSecond } = signPool(seeded.publisher, `r${run}-${Date.now().toString(36)}`, config.createPool);
    const create = await sampler.window(() => createLoad(http(registry.url, config.createConnections), seeded.accessToken, pool, more));
    createRuns.push({ result: { ...create.result, signPerSecond }, usage: create.usage });
    say(`  creates run ${run}: ${fmt(create.result.requestsPerSecond)} creates/s, p99 ${fmt(create.result.latencyP99Ms, 1)} ms, non-201 ${create.result.non201Total}, server CPU ${fmt(create.usage.serverCpuPercent)}% (kernel ${fmt(create.usage.serverKernelPercent)}%), postgres CPU ${fmt(create.usage.postgresCpuPercent)}%, generator CPU ${fmt(create.usage.generatorCpuPercent)}%, RSS peak ${fmt(create.usage.rssPeakMb)} MB, CPU pressure ${fmt(create.usage.cpuPressurePercent)}% (pre-signed ${fmt(signPerSecond)}/s${create.result.signedDuringRun > 0 ? `, ${create.result.signedDuringRun} signed during the run: raise --create-pool` : ""})`);
    for (const sample of create.result.failureSamples) say(`    non-201: ${sample}`);
  }
  sampler.stop();

  const rss = [...sampler.loadSamples()].sort((a, b) => a - b);
  const restMedian = median(restRuns.map((r) => r.result.requestsPerSecond));
  const baselineMedian = median(baselineRuns.map((r) => r.result.requestsPerSecond));
  return {
    rest: {
      registryRps: restMedian,
      registryP99Ms: median(restRuns.map((r) => r.result.latencyP99Ms)),
      registryP50Ms: median(restRuns.map((r) => r.result.latencyP50Ms)),
      baselineRps: baselineMedian,
      baselineP99Ms: median(baselineRuns.map((r) => r.result.latencyP99Ms)),
      baselineP50Ms: median(baselineRuns.map((r) => r.result.latencyP50Ms)),
      ratio: restMedian / baselineMedian,
      pairedRatios: restRuns.map((r, i) => r.result.requestsPerSecond / baselineRuns[i]!.result.requestsPerSecond),
      failures: restRuns.reduce((sum, r) => sum + r.result.failures, 0),
      registryRuns: restRuns,
      baselineRuns,
    },
    grpc: {
      rps: median(grpcRuns.map((r) => r.result.requestsPerSecond)),
      p99Ms: median(grpcRuns.map((r) => r.result.latencyP99Ms)),
      p50Ms: median(grpcRuns.map((r) => r.result.latencyP50Ms)),
      failures: grpcRuns.reduce((sum, r) => sum + Object.values(r.result.errors).reduce((a, b) => a + b, 0), 0),
      runs: grpcRuns,
    },
    creates: {
      perSecond: median(createRuns.map((r) => r.result.requestsPerSecond)),
      p99Ms: median(createRuns.map((r) => r.result.latencyP99Ms)),
      p50Ms: median(createRuns.map((r) => r.result.latencyP50Ms)),
      non201: createRuns.reduce((sum, r) => sum + r.result.non201Total + r.result.transportErrors, 0),
      runs: createRuns,
    },
    rss: {
      peakMb: rss.at(-1) ?? Number.NaN,
      medianMb: median(rss),
      samples: rss.length,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Profile mode: a fresh server under --cpu-prof per phase.

async function profile(
  databaseUrl: string,
  registry: Registry,
  seeded: Seeded,
  bodyFile: string,
): Promise<Record<string, ProfileSummary>> {
  rmSync(PROFILES, { recursive: true, force: true });
  mkdirSync(PROFILES, { recursive: true });
  await registry.child.stop();
  const summaries: Record<string, ProfileSummary> = {};

  // The floor first, profiled the same way, so the two profiles can be read side by side.
  {
    const spawned = performance.now();
    const baseline = await startBaseline(bodyFile, "baseline");
    const loadStart = (performance.now() - spawned) / 1000 + config.warmupSeconds + 0.3;
    const { result, usage } = await new ServerSampler(baseline.child.pid, database!.name).window(() =>
      resolveLoad(
        { url: baseline.url, connections: config.restConnections, durationSeconds: config.durationSeconds, warmupSeconds: config.warmupSeconds },
        seeded.restPaths,
      ),
    );
    const loadEnd = (performance.now() - spawned) / 1000 - 0.3;
    await baseline.child.stop();
    const file = join(PROFILES, "baseline.cpuprofile");
    summaries.baseline = summariseProfile(file, ROOT, 25, { fromSeconds: loadStart, toSeconds: loadEnd });
    say(`\nbaseline: ${fmt(result.requestsPerSecond)} req/s, p99 ${fmt(result.latencyP99Ms, 1)} ms; server CPU ${fmt(usage.serverCpuPercent)}% (kernel ${fmt(usage.serverKernelPercent)}%; ${fmt(cpuMicrosPerRequest(usage.serverCpuPercent, result.requestsPerSecond))} µs per request), CPU pressure ${fmt(usage.cpuPressurePercent)}%`);
    say(formatProfileSummary(`baseline (${file})`, summaries.baseline));
  }

  const http = (server: Registry, connections: number) => ({
    url: server.url,
    connections,
    durationSeconds: config.durationSeconds,
    warmupSeconds: config.warmupSeconds,
  });
  // Each phase prepares (signs, gets a token) outside the profiled window, then returns its load.
  const phases: { name: string; lead?: number; prepare: (server: Registry) => Promise<() => Promise<{ text: string; perSecond: number }>> }[] = [
    {
      name: "rest-resolve",
      prepare: async (server) => async () => {
        const r = await resolveLoad(http(server, config.restConnections), seeded.restPaths);
        return { text: `${fmt(r.requestsPerSecond)} req/s, p99 ${fmt(r.latencyP99Ms, 1)} ms, failures ${r.failures}`, perSecond: r.requestsPerSecond };
      },
    },
    {
      name: "grpc-resolve",
      lead: 1.5, // the load process loads its TypeScript before it connects
      prepare: async (server) => async () => {
        const r = await grpcLoad(server, seeded.dids);
        return { text: `${fmt(r.requestsPerSecond)} req/s, p99 ${fmt(r.latencyP99Ms, 1)} ms, client CPU ${fmt(r.generatorCpuPercent)}%`, perSecond: r.requestsPerSecond };
      },
    },
    {
      name: "create",
      prepare: async (server) => {
        const { pool, more } = signPool(seeded.publisher, `p-${Date.now().toString(36)}`, config.createPool);
        const token = await issueAccessToken(server, seeded.rootToken);
        return async () => {
          const r = await createLoad(http(server, config.createConnections), token, pool, more);
          return { text: `${fmt(r.requestsPerSecond)} creates/s, p99 ${fmt(r.latencyP99Ms, 1)} ms, non-201 ${r.non201Total}`, perSecond: r.requestsPerSecond };
        };
      },
    },
  ];
  for (const phase of phases) {
    const spawned = performance.now();
    const server = await startRegistry(databaseUrl, phase.name);
    const load = await phase.prepare(server);
    // The profile starts with the process; keep only the samples of the measured load.
    const loadStart = (performance.now() - spawned) / 1000 + config.warmupSeconds + (phase.lead ?? 0) + 0.3;
    const usage = await new ServerSampler(server.child.pid, database!.name).window(load);
    const loadEnd = (performance.now() - spawned) / 1000 - 0.3;
    const exit = await server.child.stop(20_000);
    if (exit !== 0) throw new Error(`profiled server exited with ${exit}; no profile written`);
    const file = join(PROFILES, `${phase.name}.cpuprofile`);
    const summary = summariseProfile(file, ROOT, 25, { fromSeconds: loadStart, toSeconds: loadEnd });
    summaries[phase.name] = summary;
    say(`\n${phase.name}: ${usage.result.text}; server CPU ${fmt(usage.usage.serverCpuPercent)}% (kernel ${fmt(usage.usage.serverKernelPercent)}%; about ${fmt(cpuMicrosPerRequest(usage.usage.serverCpuPercent, usage.result.perSecond))} µs per request), postgres CPU ${fmt(usage.usage.postgresCpuPercent)}%, CPU pressure ${fmt(usage.usage.cpuPressurePercent)}%, load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}`);
    say(formatProfileSummary(`${phase.name} (${file})`, summary));
  }
  return summaries;
}

// ---------------------------------------------------------------------------------------------

/** Which code was measured: the commit, and any uncommitted changes to what the server runs. */
function codeState(): { commit: string; uncommitted: string[] } {
  const git = (...args: string[]) => {
    try {
      // trimEnd: porcelain lines start with a space (" M file") that must stay.
      return execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trimEnd();
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
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(LOG, "");
  // Measure what `npm start` runs: the compiled build, brought up to date first.
  execFileSync("npm", ["run", "-s", "build"], { cwd: ROOT, stdio: "inherit" });
  const started = Date.now();
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    memoryGb: round(os.totalmem() / 1024 ** 3, 1),
    node: process.version,
    postgres: await serverVersion(adminUrl),
    loadAverageAtStart: os.loadavg().map((l) => round(l, 2)),
    code: codeState(),
    entryCacheSize: process.env.ENTRY_CACHE_SIZE ?? "default",
  };
  say(`registry benchmark: ${machine.cpus} CPUs (${machine.cpuModel}), Node ${machine.node}, Postgres ${machine.postgres}; load average ${machine.loadAverageAtStart.join(" ")}`);
  say(`  code: ${machine.code.commit}${machine.code.uncommitted.length === 0 ? "" : ` with uncommitted changes to ${machine.code.uncommitted.join(", ")}`}; ENTRY_CACHE_SIZE ${machine.entryCacheSize}`);
  say(`  ${config.runs} run(s) of ${config.durationSeconds} s (+${config.warmupSeconds} s warmup) each; REST ${config.restConnections} connections, gRPC ${config.grpcConcurrency} in flight, creates ${config.createConnections} connections; child logs in ${LOG}`);

  if (only !== "discovery") await resolveAndCreatePhases(machine, started);
  if (only !== "resolve" && args.profile !== true) await discoveryPhase(machine);
}

/** Resolve throughput against the floor, gRPC resolves, creates and memory (docs/performance.md). */
async function resolveAndCreatePhases(machine: MachineInfo, started: number): Promise<void> {
  database = await createBenchDatabase(adminUrl);
  say(`  database ${database.name}`);
  const registry = await startRegistry(database.url);
  say(`  registry pid ${registry.child.pid} at ${registry.url}`);
  const seeded = await seed(registry, database.url);
  say(`  seeded ${seeded.entries} entries; resolve mix: ${seeded.restPaths.length} paths, half latest, half @version`);

  const sample = await fetch(registry.url + seeded.restPaths.find((p) => p.includes("%40"))!);
  const body = Buffer.from(await sample.arrayBuffer());
  if (sample.status !== 200) throw new Error(`resolve failed: ${sample.status} ${body.toString()}`);
  const bodyFile = join(RESULTS, "baseline-body.json");
  writeFileSync(bodyFile, body);
  const baseline = await startBaseline(bodyFile);
  say(`  baseline node:http pid ${baseline.child.pid} at ${baseline.url}, answering the ${body.length}-byte resolve body`);

  if (args.profile === true) {
    await baseline.child.stop();
    const summaries = await profile(database.url, registry, seeded, bodyFile);
    writeFileSync(join(RESULTS, "profile-latest.json"), JSON.stringify({ date: new Date().toISOString(), machine, config, summaries }, null, 2));
    say(`\nwrote ${join(RESULTS, "profile-latest.json")} and the .cpuprofile files in ${PROFILES} (open them in Chrome DevTools)`);
    return;
  }

  say("");
  const figures = await measure(registry, seeded, baseline.url, baseline.child);
  const report = {
    date: new Date().toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l, 2)) },
    config,
    targets: TARGETS,
    resolveBodyBytes: body.length,
    seededEntries: seeded.entries,
    figures,
    elapsedSeconds: round((Date.now() - started) / 1000),
  };
  writeFileSync(join(RESULTS, "latest.json"), JSON.stringify(report, null, 2));
  say("");
  say(renderTable(figures, TARGETS));
  say("\nMarkdown for docs/performance.md:\n");
  say(renderMarkdown(figures, TARGETS, report.date, machine));
  say(`\nwrote ${join(RESULTS, "latest.json")} (${report.elapsedSeconds} s)`);
}

/** Discovery latency at a million entries (bench/discovery-bench.ts). */
async function discoveryPhase(machine: Record<string, unknown>): Promise<void> {
  say("");
  const figures = await runDiscoveryBench({ adminUrl, ...DISCOVERY, logFile: LOG, say });
  writeFileSync(join(RESULTS, "discovery-latest.json"), JSON.stringify({ date: new Date().toISOString(), machine, config: DISCOVERY, figures }, null, 2));
  say("");
  say(renderDiscoveryTable(figures, DISCOVERY));
  say("\nMarkdown for docs/performance.md:\n");
  say(renderDiscoveryMarkdown(figures, DISCOVERY));
  say(`\nwrote ${join(RESULTS, "discovery-latest.json")}`);
}

try {
  await main();
} catch (error) {
  process.exitCode = 1;
  if (!interrupted) say(`benchmark failed: ${(error as Error).stack ?? String(error)}`);
} finally {
  await cleanup();
}
