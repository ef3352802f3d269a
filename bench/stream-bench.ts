/**
 * Many change-feed streams against the bench's running registry (issue 20's targets), after the
 * feed part:
 *
 * 1. creates at a steady rate (open loop, REST) with no stream open: p50 and p99;
 * 2. the same with `followers` SSE streams following the head, each of which must receive every
 *    create: what a commit costs while streams wait on it;
 * 3. the server's resident memory with `idle` SSE streams open and nothing to send.
 *
 * The streams come from several loopback addresses (127.0.1.x), as many clients would, so the
 * per-address stream cap (MAX_STREAMS_PER_IP) applies as it is configured, not switched off. Each
 * stream is a raw HTTP/1.1 socket that only counts its events, so the bench's own share of the
 * two cores stays small.
 */
import http from "node:http";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { BenchPublisher } from "./entry-signer.js";
import { logSize, signedBodies, writeOpenLoop } from "./feed-bench.js";
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
  readonly say: (text: string) => void;
}

export interface CreatesUnderStreams {
  readonly streams: number;
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

/** Streams per loopback address: under the default MAX_STREAMS_PER_IP (32). */
const STREAMS_PER_ADDRESS = 25;
/** How long the streams may take to receive the last create once it is answered. */
const DELIVERY_GRACE_MS = 30_000;
/** Time for memory to settle once the idle streams are open. */
const SETTLE_MS = 5_000;

/** One SSE stream on a raw socket, counting `event: change` lines. */
interface CountingStream {
  readonly events: number;
  close(): void;
}

function openCountingStream(url: string, after: number, localAddress: string): Promise<CountingStream> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), localAddress });
    let events = 0;
    let carry = "";
    let started = false;
    socket.setEncoding("utf8");
    socket.on("error", reject);
    socket.on("connect", () => socket.write(`GET /v1/changes/stream?after=${after} HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`));
    socket.on("data", (chunk: string) => {
      const text = carry + chunk;
      if (!started) {
        if (!text.startsWith("HTTP/1.1 200")) {
          reject(new Error(`stream from ${localAddress}: ${text.slice(0, 200)}`));
          socket.destroy();
          return;
        }
        started = true;
        resolve({ get events() { return events; }, close: () => socket.destroy() });
      }
      for (let at = text.indexOf("event: change\n"); at >= 0; at = text.indexOf("event: change\n", at + 1)) events += 1;
      // Keep a marker cut by the chunk's end for the next chunk, never one already counted.
      carry = text.slice(-13);
    });
  });
}

async function openStreams(url: string, count: number, after: number, firstAddress: number): Promise<CountingStream[]> {
  const streams: CountingStream[] = [];
  for (let i = 0; i < count; i += 1) {
    const address = `127.0.1.${firstAddress + Math.floor(i / STREAMS_PER_ADDRESS)}`;
    streams.push(await openCountingStream(url, after, address));
  }
  return streams;
}

async function untilDelivered(streams: readonly CountingStream[], each: number): Promise<void> {
  const deadline = Date.now() + DELIVERY_GRACE_MS;
  while (streams.some((stream) => stream.events < each) && Date.now() < deadline) await sleep(50);
}

async function createsUnder(options: StreamBenchOptions, agent: http.Agent, streams: readonly CountingStream[], run: string): Promise<CreatesUnderStreams> {
  const bodies = signedBodies(options.publisher, `streams-${run}-${Date.now().toString(36)}`, options.creates);
  const before = streams.map((stream) => stream.events);
  const written = await writeOpenLoop(agent, options.url, options.accessToken, bodies, options.rate);
  const created = written.createdDids.size;
  await untilDelivered(streams, created + Math.max(0, ...before));
  const received = streams.reduce((sum, stream, i) => sum + stream.events - before[i]!, 0);
  return {
    streams: streams.length,
    created,
    p50Ms: round(percentileOfSorted(written.latenciesMs, 50), 2),
    p99Ms: round(percentileOfSorted(written.latenciesMs, 99), 2),
    delivered: streams.length === 0 ? 1 : round(received / (streams.length * created), 4),
  };
}

export async function runStreamBench(options: StreamBenchOptions): Promise<StreamFigures> {
  const { say } = options;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const all: CountingStream[] = [];
  try {
    say(`streams: creates at ${options.rate}/s with no stream open`);
    const alone = await createsUnder(options, agent, [], "alone");
    say(`  p50 ${alone.p50Ms} ms, p99 ${alone.p99Ms} ms (${alone.created} created)`);

    const head = (await logSize(options.url)) - 1;
    const followers = await openStreams(options.url, options.followers, head, 1);
    all.push(...followers);
    say(`streams: creates at ${options.rate}/s with ${followers.length} SSE streams following the head`);
    const followed = await createsUnder(options, agent, followers, "followed");
    say(`  p50 ${followed.p50Ms} ms, p99 ${followed.p99Ms} ms (${followed.created} created), delivered ${followed.delivered}`);
    for (const stream of all.splice(0)) stream.close();

    await sleep(SETTLE_MS);
    const rssBeforeMb = round(rssMegabytes(options.serverPid) ?? Number.NaN, 1);
    all.push(...(await openStreams(options.url, options.idle, (await logSize(options.url)) - 1, 101)));
    await sleep(SETTLE_MS);
    const rssMb = round(rssMegabytes(options.serverPid) ?? Number.NaN, 1);
    say(`streams: RSS ${rssBeforeMb} MB with none open, ${rssMb} MB with ${all.length} idle`);
    return { rate: options.rate, creates: [alone, followed], idle: { streams: all.length, rssBeforeMb, rssMb } };
  } finally {
    for (const stream of all) stream.close();
    agent.destroy();
  }
}
