/**
 * The change feed (issue 11) against the bench's running registry, after the creates part (so the
 * log holds the seed plus every create of the create runs):
 *
 * 1. replay over REST pages: GET /v1/changes?after=N&limit=1000 from the start to the size at
 *    start, one page at a time, as a mirror catching up would;
 * 2. replay over the stream: WatchChanges from the start over Connect (binary, h2c, with
 *    @connectrpc/connect-node) until the size at start is reached;
 * 3. live lag: one watcher following WatchChanges from the current end while a writer publishes
 *    pre-signed entries over REST at a steady rate, open loop; lag = when the change reached the
 *    watcher minus its loggedAt (written with clock_timestamp() inside the committing transaction,
 *    same machine clock), so it covers the rest of the transaction, the commit, waking the stream,
 *    reading the record and delivering it.
 *
 * Replays are warmed up (5,000 records each, untimed), then interleaved (REST run 1, stream run 1,
 * REST run 2, ...), and every record's index is checked: a replay that skips or repeats one stops
 * the bench. When the log holds fewer than `minRecords`, more entries are published first (REST,
 * 32 in flight), so replays are long enough to time.
 */
import http from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ChangeFeedService } from "../gen/registry/v1/change_feed_service_pb.js";
import { nowToTheSecond, signedEntry, type BenchPublisher } from "./entry-signer.js";
import { ServerSampler, type Run, type WindowUsage } from "./process-sampler.js";
import { percentileOfSorted, round } from "./stats.js";

export interface FeedBenchOptions {
  readonly url: string;
  readonly serverPid: number;
  /** The bench database, to tell its Postgres backends from other users'. */
  readonly databaseName: string;
  readonly publisher: BenchPublisher;
  readonly accessToken: string;
  /** Runs of each replay; the report quotes their median. */
  readonly runs: number;
  /** Publish entries first until the log holds at least this many records. */
  readonly minRecords: number;
  /** Entries the live writer publishes, and how many a second. */
  readonly liveCount: number;
  readonly liveRate: number;
  readonly say: (text: string) => void;
}

export const REPLAY_PAGE_SIZE = 1_000;
const FILL_IN_FLIGHT = 32;
/**
 * Connections the writers may open. The server caps connections per client address (256 by
 * default), and an open-loop writer facing a slow server would otherwise open one per waiting
 * request until refused; beyond this many, requests wait in the client for a free connection.
 */
const WRITER_CONNECTIONS = 64;
/** Records each replay reads once, untimed, before the measured runs. */
const WARMUP_RECORDS = 5_000;
/** How long the live watcher may take after the last write before missing changes count as lost. */
const LIVE_GRACE_MS = 10_000;

export interface ReplayResult {
  readonly records: number;
  readonly seconds: number;
  readonly recordsPerSecond: number;
}

export type ReplayRun = Run<ReplayResult>;

export interface ReplayFigures {
  readonly key: "rest" | "stream";
  readonly label: string;
  readonly runs: readonly ReplayRun[];
}

export interface LiveFigures {
  readonly label: string;
  readonly rate: number;
  /** Entries the writer sent, and how many were answered 201. */
  readonly sent: number;
  readonly created: number;
  /** Changes the watcher received after the primer, and whether they were exactly the created ones. */
  readonly arrived: number;
  /** Gaps, repeats, out-of-order or unknown records: empty when every change arrived in index order. */
  readonly problems: readonly string[];
  readonly lagP50Ms: number;
  readonly lagP99Ms: number;
  readonly lagMaxMs: number;
  /** How late the bench's own event loop ran (p99): an upper bound on the client's share of the lag. */
  readonly clientLoopDelayP99Ms: number;
  /** Seconds the writer took to send every entry: `sent / rate` when it kept up. */
  readonly writeSeconds: number;
  /**
   * Create latency from each entry's scheduled send time to its answer: when it climbs, the
   * writes themselves queue (the server or Postgres is saturated), and the lag is read with that.
   */
  readonly createP50Ms: number;
  readonly createP99Ms: number;
  readonly usage: WindowUsage;
}

export interface FeedFigures {
  /** Records in the log when the replays started: every replay reads exactly these. */
  readonly logRecords: number;
  /** Entries published before the replays because the log held fewer than the minimum. */
  readonly filled: { readonly entries: number; readonly perSecond: number } | undefined;
  readonly replays: readonly ReplayFigures[];
  readonly live: LiveFigures;
}

interface ChangeJson {
  readonly index: string;
  readonly entry: { readonly entryDid: string };
  readonly loggedAt: string;
}

interface PageJson {
  readonly changes?: readonly ChangeJson[];
  readonly size: string;
}

const fmt = (value: number, digits = 0) => value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

export async function runFeedBench(options: FeedBenchOptions): Promise<FeedFigures> {
  const { say } = options;
  const sampler = new ServerSampler(options.serverPid, options.databaseName);
  sampler.start();
  const agent = new http.Agent({ keepAlive: true, maxSockets: WRITER_CONNECTIONS });
  try {
    const { result: filled, usage: fillUsage } = await sampler.window(() => fillLog(options, agent));
    const logRecords = await logSize(options.url);
    say(
      `  feed: ${fmt(logRecords)} records in the log${filled === undefined ? "" : ` (${fmt(filled.entries)} entries published first to reach ${fmt(options.minRecords)}, ${fmt(filled.perSecond)}/s; server CPU ${fmt(fillUsage.serverCpuPercent)}%, postgres ${fmt(fillUsage.postgresCpuPercent)}%, client ${fmt(fillUsage.generatorCpuPercent)}%, CPU pressure ${fmt(fillUsage.cpuPressurePercent)}%)`}`,
    );

    // Untimed: the first pass through a code path runs before the JIT has compiled it.
    await replayOverRest(options.url, Math.min(WARMUP_RECORDS, logRecords));
    await replayOverStream(options.url, Math.min(WARMUP_RECORDS, logRecords));

    const replays: ReplayFigures[] = [
      { key: "rest", label: `replay, REST pages of ${fmt(REPLAY_PAGE_SIZE)}`, runs: [] },
      { key: "stream", label: "replay, WatchChanges over Connect binary h2c", runs: [] },
    ];
    for (let run = 1; run <= options.runs; run++) {
      for (const replay of replays) {
        const read =
          replay.key === "rest" ? () => replayOverRest(options.url, logRecords) : () => replayOverStream(options.url, logRecords);
        const started = performance.now();
        const { result: records, usage } = await sampler.window(read);
        const seconds = (performance.now() - started) / 1000;
        const result: ReplayResult = { records, seconds: round(seconds, 3), recordsPerSecond: records / seconds };
        (replay.runs as ReplayRun[]).push({ result, usage });
        say(
          `  ${replay.label} run ${run}: ${fmt(result.recordsPerSecond)} records/s (${fmt(records)} in ${fmt(seconds, 2)} s), server CPU ${fmt(usage.serverCpuPercent)}% (${fmt(((usage.serverCpuPercent / 100) * 1e6) / result.recordsPerSecond)} µs/record), postgres ${fmt(usage.postgresCpuPercent)}%, client ${fmt(usage.generatorCpuPercent)}%, CPU pressure ${fmt(usage.cpuPressurePercent)}%`,
        );
      }
    }

    const live = await measureLiveLag(options, sampler, agent);
    say(
      `  ${live.label}: lag p50 ${fmt(live.lagP50Ms, 1)} ms, p99 ${fmt(live.lagP99Ms, 1)} ms, max ${fmt(live.lagMaxMs, 1)} ms; ${fmt(live.arrived)} of ${fmt(live.created)} created arrived${live.problems.length === 0 ? " in index order, no gap" : `; PROBLEMS: ${live.problems.join("; ")}`}; sent in ${fmt(live.writeSeconds, 2)} s (${fmt(live.sent - live.created)} not created), create p50 ${fmt(live.createP50Ms, 1)} ms, p99 ${fmt(live.createP99Ms, 1)} ms, bench event-loop delay p99 ${fmt(live.clientLoopDelayP99Ms, 1)} ms, server CPU ${fmt(live.usage.serverCpuPercent)}%, postgres ${fmt(live.usage.postgresCpuPercent)}%, CPU pressure ${fmt(live.usage.cpuPressurePercent)}%`,
    );
    return { logRecords, filled, replays, live };
  } finally {
    sampler.stop();
    agent.destroy();
  }
}

export async function logSize(url: string): Promise<number> {
  const page = await getPage(url, undefined, 1);
  return Number(page.size);
}

async function getPage(url: string, after: string | undefined, limit: number): Promise<PageJson> {
  const query = after === undefined ? `limit=${limit}` : `after=${after}&limit=${limit}`;
  const response = await fetch(`${url}/v1/changes?${query}`);
  if (response.status !== 200) throw new Error(`GET /v1/changes?${query}: ${response.status} ${(await response.text()).slice(0, 300)}`);
  return (await response.json()) as PageJson;
}

/** Pages from the start until `size` records are read; every index must follow the one before. */
async function replayOverRest(url: string, size: number): Promise<number> {
  let expected = 0;
  let after: string | undefined;
  while (expected < size) {
    const changes = (await getPage(url, after, REPLAY_PAGE_SIZE)).changes ?? [];
    if (changes.length === 0)
      throw new Error(`REST replay: an empty page after ${after ?? "the start"} with ${size - expected} records still to read`);
    for (const change of changes) {
      if (Number(change.index) !== expected) throw new Error(`REST replay: index ${change.index} where ${expected} was due`);
      expected++;
    }
    after = changes.at(-1)!.index;
  }
  return expected;
}

/** WatchChanges from the start until `size` records arrived, each at the next index; then the call is cancelled. */
async function replayOverStream(url: string, size: number): Promise<number> {
  const client = createClient(ChangeFeedService, createConnectTransport({ baseUrl: url, httpVersion: "2" }));
  const abort = new AbortController();
  let expected = 0;
  try {
    for await (const message of client.watchChanges({}, { signal: abort.signal })) {
      const index = Number(message.change?.index ?? -1n);
      if (index !== expected) throw new Error(`stream replay: index ${index} where ${expected} was due`);
      if (++expected === size) break;
    }
  } finally {
    abort.abort();
  }
  if (expected !== size) throw new Error(`stream replay: the stream ended after ${expected} of ${size} records`);
  return expected;
}

/** Publishes one entry over REST on `agent`'s keep-alive connections; created means 201. */
export function postEntry(agent: http.Agent, url: string, token: string, body: string): Promise<{ created: boolean; detail: string }> {
  return new Promise((resolve) => {
    const request = http.request(
      `${url}/v1/entries`,
      {
        method: "POST",
        agent,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (text += chunk));
        response.on("end", () => resolve({ created: response.statusCode === 201, detail: `${response.statusCode} ${text.slice(0, 200)}` }));
        response.on("error", (error) => resolve({ created: false, detail: error.message }));
      },
    );
    request.on("error", (error) => resolve({ created: false, detail: error.message }));
    request.end(body);
  });
}

export function signedBodies(publisher: BenchPublisher, prefix: string, count: number): string[] {
  const publishedAt = nowToTheSecond();
  return Array.from({ length: count }, (_, i) => JSON.stringify(signedEntry(publisher, `${prefix}-${i}`, "1.0.0", publishedAt)));
}

/** Publishes pre-signed entries, 32 in flight, until the log holds `minRecords`; undefined when it already did. */
async function fillLog(options: FeedBenchOptions, agent: http.Agent): Promise<FeedFigures["filled"]> {
  const missing = options.minRecords - (await logSize(options.url));
  if (missing <= 0) return undefined;
  const bodies = signedBodies(options.publisher, `feed-fill-${Date.now().toString(36)}`, missing);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: FILL_IN_FLIGHT }, async () => {
      for (let body = bodies[next++]; body !== undefined; body = bodies[next++]) {
        const { created, detail } = await postEntry(agent, options.url, options.accessToken, body);
        if (!created) throw new Error(`filling the log: a create answered ${detail}`);
      }
    }),
  );
  return { entries: missing, perSecond: missing / ((performance.now() - started) / 1000) };
}

interface Arrival {
  readonly index: number;
  readonly entryDid: string;
  readonly lagMs: number;
}

/**
 * One watcher from the log's current end; a primer entry first, whose arrival shows the stream is
 * live before anything is timed; then `liveCount` pre-signed entries sent open loop, entry i at
 * start + i / rate whatever the answers before it did, so a slow commit cannot slow the writer
 * down and hide its own lag.
 */
async function measureLiveLag(options: FeedBenchOptions, sampler: ServerSampler, agent: http.Agent): Promise<LiveFigures> {
  const { url, accessToken, liveCount, liveRate } = options;
  const prefix = `feed-live-${Date.now().toString(36)}`;
  const [primer, ...bodies] = signedBodies(options.publisher, prefix, liveCount + 1);
  const primerDid = (JSON.parse(primer!) as { entryDid: string }).entryDid;
  const client = createClient(ChangeFeedService, createConnectTransport({ baseUrl: url, httpVersion: "2" }));
  const end = await logSize(url);
  const abort = new AbortController();
  const arrivals: Arrival[] = [];
  let primed: () => void = () => {};
  const primerArrived = new Promise<void>((resolve) => (primed = resolve));
  let primerIndex = -1;
  let enough = Number.POSITIVE_INFINITY;
  let allArrived: () => void = () => {};
  const done = new Promise<void>((resolve) => (allArrived = resolve));
  const watching = (async () => {
    for await (const message of client.watchChanges({ after: end === 0 ? undefined : BigInt(end - 1) }, { signal: abort.signal })) {
      // The wall clock, as loggedAt's clock_timestamp(): a monotonic clock drifts from it over minutes.
      const arrivedAt = Date.now();
      const change = message.change!;
      if (primerIndex < 0) {
        if (change.entry?.entryDid === primerDid) {
          primerIndex = Number(change.index);
          primed();
        }
        continue;
      }
      arrivals.push({
        index: Number(change.index),
        entryDid: change.entry?.entryDid ?? "",
        lagMs: arrivedAt - Date.parse(change.loggedAt),
      });
      if (arrivals.length >= enough) allArrived();
    }
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) throw error;
  });

  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  let window: { result: Written; usage: WindowUsage };
  try {
    const primerAnswer = await postEntry(agent, url, accessToken, primer!);
    if (!primerAnswer.created) throw new Error(`live lag: the primer entry answered ${primerAnswer.detail}`);
    const primerLost = sleep(LIVE_GRACE_MS, undefined, { ref: false }).then(() =>
      Promise.reject(new Error(`live lag: the primer change did not arrive within ${LIVE_GRACE_MS} ms`)),
    );
    await Promise.race([primerArrived, primerLost]);
    loopDelay.enable();
    window = await sampler.window(async () => {
      const written = await writeOpenLoop(agent, url, accessToken, bodies, liveRate);
      enough = written.createdDids.size;
      if (arrivals.length >= enough) allArrived();
      await Promise.race([done, sleep(LIVE_GRACE_MS, undefined, { ref: false })]);
      return written;
    });
  } finally {
    loopDelay.disable();
    abort.abort();
    await watching;
  }
  const {
    result: { writeSeconds, latenciesMs, createdDids, failures },
    usage,
  } = window;

  const problems = [...failures.map((detail) => `not created: ${detail}`), ...deliveryProblems(arrivals, primerIndex, createdDids)];
  const lags = arrivals.map((a) => a.lagMs).sort((a, b) => a - b);
  return {
    label: `live, ${fmt(bodies.length)} creates at ${fmt(liveRate)}/s over WatchChanges (Connect binary h2c)`,
    rate: liveRate,
    sent: bodies.length,
    created: createdDids.size,
    arrived: arrivals.length,
    problems,
    lagP50Ms: round(percentileOfSorted(lags, 50), 2),
    lagP99Ms: round(percentileOfSorted(lags, 99), 2),
    lagMaxMs: round(lags.at(-1) ?? Number.NaN, 2),
    clientLoopDelayP99Ms: round(loopDelay.percentile(99) / 1e6, 2),
    writeSeconds: round(writeSeconds, 3),
    createP50Ms: round(percentileOfSorted(latenciesMs, 50), 2),
    createP99Ms: round(percentileOfSorted(latenciesMs, 99), 2),
    usage,
  };
}

export interface Written {
  readonly writeSeconds: number;
  /** Milliseconds from each entry's scheduled send time to its answer, sorted. */
  readonly latenciesMs: readonly number[];
  readonly createdDids: ReadonlySet<string>;
  /** Answers other than 201, as "<count> x <answer>". */
  readonly failures: readonly string[];
}

/** Sends entry i at start + i / rate, without waiting for earlier answers; resolves once all are answered. */
export async function writeOpenLoop(
  agent: http.Agent,
  url: string,
  token: string,
  bodies: readonly string[],
  rate: number,
): Promise<Written> {
  const intervalMs = 1000 / rate;
  const createdDids = new Set<string>();
  const failures = new Map<string, number>();
  const answers: Promise<void>[] = [];
  const latenciesMs: number[] = [];
  const started = performance.now();
  for (let sent = 0; sent < bodies.length; ) {
    const due = Math.min(bodies.length, Math.floor((performance.now() - started) / intervalMs) + 1);
    for (; sent < due; sent++) {
      const body = bodies[sent]!;
      const scheduled = started + sent * intervalMs;
      answers.push(
        postEntry(agent, url, token, body).then(({ created, detail }) => {
          latenciesMs.push(performance.now() - scheduled);
          if (created) createdDids.add((JSON.parse(body) as { entryDid: string }).entryDid);
          else failures.set(detail, (failures.get(detail) ?? 0) + 1);
        }),
      );
    }
    if (sent < bodies.length) await sleep(Math.max(0, started + sent * intervalMs - performance.now()));
  }
  const writeSeconds = (performance.now() - started) / 1000;
  await Promise.all(answers);
  return {
    writeSeconds,
    latenciesMs: latenciesMs.sort((a, b) => a - b),
    createdDids,
    failures: [...failures].map(([detail, count]) => `${count} x ${detail}`),
  };
}

/** Every created entry once, at consecutive indexes after the primer's, and nothing else. */
function deliveryProblems(arrivals: readonly Arrival[], primerIndex: number, createdDids: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  arrivals.forEach((arrival, i) => {
    if (problems.length >= 5) return;
    const due = primerIndex + 1 + i;
    if (arrival.index !== due) problems.push(`index ${arrival.index} arrived where ${due} was due`);
    else if (!createdDids.has(arrival.entryDid))
      problems.push(`index ${arrival.index} is ${arrival.entryDid}, which the writer did not create`);
    else if (seen.has(arrival.entryDid)) problems.push(`${arrival.entryDid} arrived twice`);
    seen.add(arrival.entryDid);
  });
  const missing = [...createdDids].filter((did) => !seen.has(did)).length;
  if (missing > 0) problems.push(`${missing} created entries never arrived (waited ${LIVE_GRACE_MS / 1000} s after the last answer)`);
  return problems;
}
