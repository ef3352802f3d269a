/**
 * Many change-feed streams against the bench's running registry (issue 20's targets), after the
 * feed part:
 *
 * 1. creates with no stream open, in two shapes: one at a time (each sent when the last was
 *    answered) and at a steady rate (open loop, REST): p50 and p99;
 * 2. the same with `followers` SSE streams following the head, each of which must receive every
 *    create: what a commit costs while streams wait on it;
 * 3. the server's resident memory with `idle` SSE streams open and nothing to send.
 *
 * The streams come from several loopback addresses (127.0.1.x), as many clients would, so the
 * per-address stream cap (MAX_STREAMS_PER_IP) applies as it is configured, not switched off. The
 * streams are raw HTTP/1.1 sockets that only count their events, held by a child process
 * (bench/stream-clients.ts), so receiving their events does not delay the writer's timings.
 */
import http from "node:http";
import { fork } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import type { BenchPublisher } from "./entry-signer.js";
import { logSize, postEntry, signedBodies, writeOpenLoop } from "./feed-bench.js";
import { rssMegabytes } from "./process-sampler.js";
import { percentileOfSorted, round } from "./stats.js";

export interface StreamBenchOptions {
  readonly url: string;
  readonly serverPid: number;
  readonly publisher: BenchPublisher;
  readonly accessToken: string;
  /** Streams following the head while creates run. */
  readonly followers: number;
  /** Streams held open, idle, while the server's memory is read. */
  readonly idle: number;
  /** Creates in each timed load, and how many a second. */
  readonly creates: number;
  readonly rate: number;
  /** Creates sent one at a time, each when the last was answered. */
  readonly sequentialCreates: number;
  readonly say: (text: string) => void;
}

export interface CreatesUnderStreams {
  readonly streams: number;
  /** "one at a time": each create sent when the last was answered; "open loop": at `rate` a second whatever the answers. */
  readonly shape: "one at a time" | "open loop";
  readonly created: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Events the streams received of those they were owed (streams x created); 1 when all arrived. */
  readonly delivered: number;
}

export interface StreamFigures {
  readonly rate: number;
  readonly creates: readonly CreatesUnderStreams[];
  readonly idle: { readonly streams: number; readonly rssBeforeMb: number; readonly rssMb: number };
}

/** How long the streams may take to receive the last create once it is answered. */
const DELIVERY_GRACE_MS = 30_000;
/** Time for memory to settle once the idle streams are open. */
const SETTLE_MS = 5_000;

/** SSE streams held by a child process (bench/stream-clients.ts), each counting its events. */
export interface StreamClients {
  readonly size: number;
  counts(): Promise<number[]>;
  close(): Promise<void>;
}

export async function openStreams(url: string, count: number, after: number, firstAddress: number): Promise<StreamClients> {
  const child = fork("bin/run-ts.js", ["bench/stream-clients.ts", url, String(count), String(after), String(firstAddress)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  await new Promise<void>((resolve, reject) => {
    child.once("message", (message) => (message === "ready" ? resolve() : reject(new Error(`stream clients: ${String(message)}`))));
    child.once("exit", (code) => reject(new Error(`stream clients exited with ${code} before their streams were open`)));
  });
  return {
    size: count,
    counts: () =>
      new Promise((resolve) => {
        child.once("message", (message) => resolve((message as { counts: number[] }).counts));
        child.send("counts");
      }),
    close: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.send("close");
      await exited;
    },
  };
}

/** Waits until every stream has `each` events; returns the counts then (or at the deadline). */
async function untilDelivered(streams: StreamClients, each: number): Promise<number[]> {
  const deadline = Date.now() + DELIVERY_GRACE_MS;
  for (;;) {
    const counts = await streams.counts();
    if (counts.every((count) => count >= each) || Date.now() >= deadline) return counts;
    await sleep(100);
  }
}

const NO_STREAMS: StreamClients = { size: 0, counts: async () => [], close: async () => {} };

async function createsUnder(
  options: StreamBenchOptions,
  agent: http.Agent,
  streams: StreamClients,
  shape: CreatesUnderStreams["shape"],
): Promise<CreatesUnderStreams> {
  const count = shape === "open loop" ? options.creates : options.sequentialCreates;
  const bodies = signedBodies(options.publisher, `streams-${shape.replaceAll(" ", "-")}-${streams.size}-${Date.now().toString(36)}`, count);
  const before = await streams.counts();
  const written =
    shape === "open loop"
      ? await writeOpenLoop(agent, options.url, options.accessToken, bodies, options.rate).then((w) => ({
          created: w.createdDids.size,
          latenciesMs: w.latenciesMs,
        }))
      : await writeOneAtATime(agent, options, bodies);
  const after = await untilDelivered(streams, written.created + Math.max(0, ...before));
  const received = after.reduce((sum, count, i) => sum + count - before[i]!, 0);
  return {
    streams: streams.size,
    shape,
    created: written.created,
    p50Ms: round(percentileOfSorted(written.latenciesMs, 50), 2),
    p99Ms: round(percentileOfSorted(written.latenciesMs, 99), 2),
    delivered: streams.size === 0 ? 1 : round(received / (streams.size * written.created), 4),
  };
}

/** Sends each entry once the one before was answered. */
async function writeOneAtATime(
  agent: http.Agent,
  options: StreamBenchOptions,
  bodies: readonly string[],
): Promise<{ created: number; latenciesMs: readonly number[] }> {
  const latenciesMs: number[] = [];
  let created = 0;
  for (const body of bodies) {
    const sent = performance.now();
    if ((await postEntry(agent, options.url, options.accessToken, body)).created) created += 1;
    latenciesMs.push(performance.now() - sent);
  }
  return { created, latenciesMs: latenciesMs.sort((a, b) => a - b) };
}

/** Each shape of creates, with the streams given. */
async function createsInEachShape(options: StreamBenchOptions, agent: http.Agent, streams: StreamClients): Promise<CreatesUnderStreams[]> {
  const runs: CreatesUnderStreams[] = [];
  for (const shape of ["one at a time", "open loop"] as const) {
    const run = await createsUnder(options, agent, streams, shape);
    options.say(
      `  ${shape}: p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms (${run.created} created)${streams.size === 0 ? "" : `, delivered ${run.delivered}`}`,
    );
    runs.push(run);
  }
  return runs;
}

export async function runStreamBench(options: StreamBenchOptions): Promise<StreamFigures> {
  const { say } = options;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let open = NO_STREAMS;
  try {
    say("streams: creates with no stream open");
    const alone = await createsInEachShape(options, agent, NO_STREAMS);
    open = await openStreams(options.url, options.followers, (await logSize(options.url)) - 1, 1);
    say(`streams: creates with ${open.size} SSE streams following the head`);
    const followed = await createsInEachShape(options, agent, open);
    await open.close();
    open = NO_STREAMS;

    await sleep(SETTLE_MS);
    const rssBeforeMb = round(rssMegabytes(options.serverPid) ?? Number.NaN, 1);
    open = await openStreams(options.url, options.idle, (await logSize(options.url)) - 1, 101);
    await sleep(SETTLE_MS);
    const rssMb = round(rssMegabytes(options.serverPid) ?? Number.NaN, 1);
    say(`streams: RSS ${rssBeforeMb} MB with none open, ${rssMb} MB with ${open.size} idle`);
    return { rate: options.rate, creates: [...alone, ...followed], idle: { streams: open.size, rssBeforeMb, rssMb } };
  } finally {
    await open.close();
    agent.destroy();
  }
}
