/** The benchmark's figures and their rendering as a console table and as Markdown. */
import type { GrpcLoadResult } from "./grpc-load.js";
import type { CreateLoadResult, HttpLoadResult } from "./http-load.js";
import type { WindowUsage } from "./process-sampler.js";

interface Run<T> {
  readonly result: T;
  readonly usage: WindowUsage;
}

export interface Figures {
  readonly rest: {
    readonly registryRps: number;
    readonly registryP99Ms: number;
    readonly registryP50Ms: number;
    readonly baselineRps: number;
    readonly baselineP99Ms: number;
    readonly baselineP50Ms: number;
    /** Median registry req/s over median baseline req/s. */
    readonly ratio: number;
    /** Each registry run over the baseline run just before it. */
    readonly pairedRatios: readonly number[];
    readonly failures: number;
    readonly registryRuns: readonly Run<HttpLoadResult>[];
    readonly baselineRuns: readonly Run<HttpLoadResult>[];
  };
  readonly grpc: {
    readonly rps: number;
    readonly p99Ms: number;
    readonly p50Ms: number;
    readonly failures: number;
    readonly runs: readonly Run<GrpcLoadResult>[];
  };
  readonly creates: {
    readonly perSecond: number;
    readonly p99Ms: number;
    readonly p50Ms: number;
    /** Non-201 answers, connection errors and timeouts over all runs, warmups included. */
    readonly non201: number;
    readonly runs: readonly Run<CreateLoadResult>[];
  };
  readonly rss: { readonly peakMb: number; readonly medianMb: number; readonly samples: number };
}

export interface Targets {
  readonly restRatio: number;
  readonly createsPerSecond: number;
  readonly rssMb: number;
}

export interface MachineInfo {
  readonly loadAverageAtStart: readonly number[];
  readonly code: { readonly commit: string; readonly uncommitted: readonly string[] };
  readonly entryCacheSize: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly node: string;
  readonly postgres: string;
}

interface Row {
  readonly measure: string;
  readonly value: string;
  readonly runs: string;
  readonly cpu: string;
  readonly pressure: string;
  readonly target: string;
  readonly verdict: string;
}

const n = (value: number, digits = 0) =>
  Number.isFinite(value)
    ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : "n/a";
const list = (values: readonly number[], digits = 0) => values.map((v) => n(v, digits)).join(" / ");
const cpu = (runs: readonly { server: number; postgres: number; generator: number }[]) => {
  const mean = (pick: (r: { server: number; postgres: number; generator: number }) => number) =>
    runs.reduce((sum, r) => sum + pick(r), 0) / Math.max(1, runs.length);
  return `${n(mean((r) => r.server))} / ${n(mean((r) => r.postgres))} / ${n(mean((r) => r.generator))}`;
};
const usageOf = (runs: readonly Run<unknown>[]) =>
  runs.map((r) => ({ server: r.usage.serverCpuPercent, postgres: r.usage.postgresCpuPercent, generator: r.usage.generatorCpuPercent }));
const grpcUsage = (runs: readonly Run<GrpcLoadResult>[]) =>
  runs.map((r) => ({ server: r.result.serverCpuPercent, postgres: r.result.postgresCpuPercent, generator: r.result.generatorCpuPercent }));

/** Server CPU time per successful request, in microseconds: robust to how busy the machine was. */
const cpuPerRequest = (cpuPercent: number, perSecond: number) => (cpuPercent / 100 / perSecond) * 1e6;
const medianOf = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const httpCpuPerRequest = (runs: readonly Run<HttpLoadResult>[]) =>
  runs.map((r) => cpuPerRequest(r.usage.serverCpuPercent, r.result.requestsPerSecond));

/** A row that only informs: no CPU split, no target. */
function info(measure: string, value: string, runs: string): Row {
  return { measure, value, runs, cpu: "", pressure: "", target: "", verdict: "" };
}

function verdict(pass: boolean, missBy?: string): string {
  return pass ? "PASS" : `MISS${missBy === undefined ? "" : ` (${missBy})`}`;
}

function rows(f: Figures, t: Targets): Row[] {
  const ratioPass = f.rest.ratio >= t.restRatio;
  const createsPass = f.creates.perSecond >= t.createsPerSecond;
  const rssPass = f.rss.peakMb < t.rssMb;
  return [
    {
      measure: "REST resolve, registry (req/s)",
      value: n(f.rest.registryRps),
      runs: list(f.rest.registryRuns.map((r) => r.result.requestsPerSecond)),
      cpu: cpu(usageOf(f.rest.registryRuns)),
      pressure: list(f.rest.registryRuns.map((r) => r.usage.cpuPressurePercent)),
      target: "",
      verdict: f.rest.failures === 0 ? "" : `${f.rest.failures} failed`,
    },
    {
      measure: "REST resolve, node:http floor (req/s)",
      value: n(f.rest.baselineRps),
      runs: list(f.rest.baselineRuns.map((r) => r.result.requestsPerSecond)),
      cpu: cpu(usageOf(f.rest.baselineRuns)),
      pressure: list(f.rest.baselineRuns.map((r) => r.usage.cpuPressurePercent)),
      target: "",
      verdict: "",
    },
    {
      measure: "REST resolve, registry / floor",
      value: n(f.rest.ratio, 2),
      runs: list(f.rest.pairedRatios, 2),
      cpu: "",
      pressure: "",
      target: `>= ${t.restRatio}`,
      verdict: verdict(ratioPass, `${n(100 * (1 - f.rest.ratio / t.restRatio))}% short`),
    },
    info("Server CPU per REST resolve, registry (µs)", n(medianOf(httpCpuPerRequest(f.rest.registryRuns))), list(httpCpuPerRequest(f.rest.registryRuns))),
    info("Server CPU per request, node:http floor (µs)", n(medianOf(httpCpuPerRequest(f.rest.baselineRuns))), list(httpCpuPerRequest(f.rest.baselineRuns))),
    info("REST resolve p99, registry (ms)", n(f.rest.registryP99Ms, 1), list(f.rest.registryRuns.map((r) => r.result.latencyP99Ms), 1)),
    info("REST resolve p99, node:http floor (ms)", n(f.rest.baselineP99Ms, 1), list(f.rest.baselineRuns.map((r) => r.result.latencyP99Ms), 1)),
    {
      measure: "gRPC resolve (req/s)",
      value: n(f.grpc.rps),
      runs: list(f.grpc.runs.map((r) => r.result.requestsPerSecond)),
      cpu: cpu(grpcUsage(f.grpc.runs)),
      pressure: list(f.grpc.runs.map((r) => r.result.cpuPressurePercent)),
      target: "",
      verdict: f.grpc.failures === 0 ? "" : `${f.grpc.failures} failed`,
    },
    info("gRPC resolve p99 (ms)", n(f.grpc.p99Ms, 1), list(f.grpc.runs.map((r) => r.result.latencyP99Ms), 1)),
    info("Server CPU per gRPC resolve (µs)", n(medianOf(f.grpc.runs.map((r) => cpuPerRequest(r.result.serverCpuPercent, r.result.requestsPerSecond)))), list(f.grpc.runs.map((r) => cpuPerRequest(r.result.serverCpuPercent, r.result.requestsPerSecond)))),
    {
      measure: "Creates with signature verification (/s)",
      value: n(f.creates.perSecond),
      runs: list(f.creates.runs.map((r) => r.result.requestsPerSecond)),
      cpu: cpu(usageOf(f.creates.runs)),
      pressure: list(f.creates.runs.map((r) => r.usage.cpuPressurePercent)),
      target: `>= ${n(t.createsPerSecond)}`,
      verdict: verdict(createsPass, `${n(100 * (1 - f.creates.perSecond / t.createsPerSecond))}% short`),
    },
    info("Create p99 (ms)", n(f.creates.p99Ms, 1), list(f.creates.runs.map((r) => r.result.latencyP99Ms), 1)),
    info("Server CPU per create (µs)", n(medianOf(httpCpuPerRequest(f.creates.runs))), list(httpCpuPerRequest(f.creates.runs))),
    {
      measure: "Creates answered other than 201",
      value: n(f.creates.non201),
      runs: "",
      cpu: "",
      pressure: "",
      target: "0",
      verdict: verdict(f.creates.non201 === 0),
    },
    {
      measure: "Server RSS under load, peak (MB)",
      value: n(f.rss.peakMb),
      runs: `median ${n(f.rss.medianMb)}, ${f.rss.samples} samples`,
      cpu: "",
      pressure: "",
      target: `< ${t.rssMb}`,
      verdict: verdict(rssPass, `${n(f.rss.peakMb - t.rssMb)} MB over`),
    },
  ];
}

const HEADERS: Row = {
  measure: "Measure",
  value: "Median",
  runs: "Runs",
  cpu: "CPU % srv/pg/gen",
  pressure: "CPU PSI %",
  target: "Target",
  verdict: "Result",
};

export function renderTable(f: Figures, t: Targets): string {
  const all = [HEADERS, ...rows(f, t)];
  const keys = Object.keys(HEADERS) as (keyof Row)[];
  const widths = keys.map((key) => Math.max(...all.map((row) => row[key].length)));
  const line = (row: Row) => keys.map((key, i) => row[key].padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(HEADERS), widths.map((w) => "-".repeat(w)).join("  "), ...all.slice(1).map(line)].join("\n");
}

export function renderMarkdown(f: Figures, t: Targets, date: string, machine: MachineInfo): string {
  const body = rows(f, t).map(
    (row) =>
      `| ${row.measure} | ${row.value} | ${row.runs} | ${row.cpu} | ${row.pressure} | ${row.target.replace(">=", "≥")} | ${row.verdict} |`,
  );
  return [
    `Code ${machine.code.commit}${machine.code.uncommitted.length === 0 ? "" : ` plus uncommitted changes to ${machine.code.uncommitted.join(", ")}`}, ENTRY_CACHE_SIZE ${machine.entryCacheSize}. Run of ${date.slice(0, 10)} on a ${machine.cpus}-core shared machine (${machine.cpuModel}), Node ${machine.node}, Postgres ${machine.postgres}; 1/5/15-minute load average at the start ${machine.loadAverageAtStart.join(" / ")}. Medians of ${f.rest.registryRuns.length} run${f.rest.registryRuns.length === 1 ? "" : "s"}; "Runs" lists each run; CPU is the mean percent of one core used by the server / all Postgres processes / the load generator; CPU pressure is the share of each run in which some task on the machine waited for a CPU (Linux PSI), a measure of how noisy the machine was.`,
    "",
    "| Measure | Median | Runs | CPU % (server / Postgres / load generator) | CPU pressure % | Target | Result |",
    "| --- | ---: | --- | --- | --- | --- | --- |",
    ...body,
  ].join("\n");
}
