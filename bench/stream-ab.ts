/**
 * An A/B of create latency under SSE streams following the head, between source trees (a
 * checkout of one commit and one of another), alternated in one run so both meet the same
 * machine load. Each round starts each tree's server on one fresh Postgres database, times
 * creates one at a time with no stream open, then with `followers` SSE streams (held by
 * bench/stream-clients.ts in a process of its own), then `rateCreates` at `rate` a second, and
 * stops the server. Prints each round's figures and the medians per tree.
 *
 * Usage: node bin/run-ts.js bench/stream-ab.ts [--rounds 3] [--followers 500] [--creates 300]
 *        [--rate-creates 500] [--rate 100] [--profile DIR] TREE...
 * A TREE is a directory holding the repository's src/ and bin/ (node_modules reachable from it).
 * DATABASE_URL names the Postgres admin URL (default postgres://postgres@127.0.0.1:5432/test).
 */
import http from "node:http";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { createBenchDatabase } from "./bench-database.js";
import { freePort, startChild, stopAllChildren, waitForHttp } from "./child-processes.js";
import { createPublisher } from "./entry-signer.js";
import { logSize, postEntry, signedBodies, writeOpenLoop } from "./feed-bench.js";
import { percentileOfSorted, round } from "./stats.js";
import { openStreams, type StreamClients } from "./stream-bench.js";

const { values: args, positionals: trees } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string" },
    followers: { type: "string" },
    creates: { type: "string" },
    "rate-creates": { type: "string" },
    rate: { type: "string" },
    profile: { type: "string" },
  },
});
const rounds = Number(args.rounds ?? 3);
const followers = Number(args.followers ?? 500);
const creates = Number(args.creates ?? 300);
const rateCreates = Number(args["rate-creates"] ?? 500);
const rate = Number(args.rate ?? 100);
const LOG = "/tmp/stream-ab.log";
const SCOPE = "registry.publish.skill";

const database = await createBenchDatabase(process.env.DATABASE_URL);
const publisher = createPublisher();
process.on("SIGINT", () => void stopAllChildren().then(() => process.exit(130)));

function registryArgs(tree: string, command: readonly string[]): string[] {
  return [join(tree, "bin/run-ts.js"), join(tree, "src/cli/run.ts"), ...command];
}

async function rootToken(tree: string): Promise<string> {
  const child = startChild(
    "cli",
    registryArgs(tree, ["root-token", "create", "--subject", publisher.did, "--scopes", SCOPE, "--description", "ab"]),
    {
      env: { ...process.env, DATABASE_URL: database.url },
      logFile: LOG,
      captureStdout: true,
    },
  );
  if ((await child.exited) !== 0) throw new Error(`root-token create failed (see ${LOG})`);
  return child.stdout().trim();
}

async function accessToken(url: string, root: string): Promise<string> {
  const response = await fetch(`${url}/v1/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${root}`, "content-type": "application/json" },
    body: JSON.stringify({ scopes: [SCOPE], ttlSeconds: 3600 }),
  });
  const body = (await response.json()) as { accessToken?: string };
  if (body.accessToken === undefined) throw new Error(`token: ${response.status} ${JSON.stringify(body)}`);
  return body.accessToken;
}

/** SSE streams at the head of the log, from the stream bench's own client process. */
async function openStreamsAtHead(url: string, count: number): Promise<StreamClients> {
  return openStreams(url, count, (await logSize(url)) - 1, 1);
}

async function oneAtATime(agent: http.Agent, url: string, token: string, bodies: readonly string[]): Promise<number[]> {
  const latencies: number[] = [];
  for (const body of bodies) {
    const sent = performance.now();
    const answer = await postEntry(agent, url, token, body);
    if (!answer.created) throw new Error(`create: ${answer.detail}`);
    latencies.push(performance.now() - sent);
  }
  return latencies.sort((a, b) => a - b);
}

/** Waits until every stream holds `each` events; the share of the owed events that arrived. */
async function delivered(streams: StreamClients, before: number[], each: number): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const counts = await streams.counts();
    if (counts.every((count, i) => count - before[i]! >= each) || Date.now() > deadline) {
      return round(counts.reduce((sum, count, i) => sum + count - before[i]!, 0) / (counts.length * each), 4);
    }
    await sleep(100);
  }
}

/** The process's CPU time so far (user and system), in milliseconds: a cost that the machine's load does not inflate as it does latency. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime are fields 14 and 15 of stat, in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Round {
  readonly tree: string;
  readonly alone: number;
  readonly followed: number;
  readonly aloneRate: number;
  readonly followedRate: number;
  /** Server CPU milliseconds per create, one at a time, with no stream and with the followers. */
  readonly cpuAlone: number;
  readonly cpuFollowed: number;
}

async function runRound(tree: string, root: string, label: string): Promise<Round> {
  const port = await freePort();
  const profile = args.profile === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", resolve(args.profile, label)];
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_URL: database.url,
    NODE_ENV: "production",
    RATE_LIMIT_RPS: "0",
    WRITE_RATE_LIMIT_RPS: "0",
  };
  const server = startChild("registry", [...profile, ...registryArgs(tree, ["serve"])], { env, logFile: LOG });
  const started = performance.now();
  const since = () => round((performance.now() - started) / 1000, 1);
  const url = `http://127.0.0.1:${port}`;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  try {
    await waitForHttp(`${url}/readyz`, server);
    const token = await accessToken(url, root);
    const tag = `${label}-${Date.now().toString(36)}`;
    await oneAtATime(agent, url, token, signedBodies(publisher, `${tag}-warm`, 100));
    const p50 = (sorted: readonly number[]) => round(percentileOfSorted(sorted, 50), 2);
    const aloneBodies = signedBodies(publisher, `${tag}-alone`, creates);
    let cpu = cpuMs(server.pid);
    const alone = p50(await oneAtATime(agent, url, token, aloneBodies));
    const cpuAlone = round((cpuMs(server.pid) - cpu) / creates, 3);
    const atRate = async (name: string) =>
      rateCreates === 0
        ? Number.NaN
        : p50((await writeOpenLoop(agent, url, token, signedBodies(publisher, `${tag}-${name}`, rateCreates), rate)).latenciesMs);
    const aloneRate = await atRate("alone-rate");
    const streams = await openStreamsAtHead(url, followers);
    try {
      await sleep(500);
      const from = since();
      let before = await streams.counts();
      const followedBodies = signedBodies(publisher, `${tag}-followed`, creates);
      cpu = cpuMs(server.pid);
      const followed = p50(await oneAtATime(agent, url, token, followedBodies));
      const share = await delivered(streams, before, creates);
      const cpuFollowed = round((cpuMs(server.pid) - cpu) / creates, 3);
      before = await streams.counts();
      const followedRate = await atRate("followed-rate");
      const shareRate = rateCreates === 0 ? 1 : await delivered(streams, before, rateCreates);
      if (args.profile !== undefined) console.log(`${label}: streams followed from ${from} s to ${since()} s after the server started`);
      console.log(
        `${label}: one at a time ${alone} -> ${followed} ms (${round(followed / alone, 2)}x, delivered ${share}); ` +
          `${rate}/s ${aloneRate} -> ${followedRate} ms (${round(followedRate / aloneRate, 2)}x, delivered ${shareRate}); ` +
          `server CPU per create ${cpuAlone} -> ${cpuFollowed} ms`,
      );
      return { tree, alone, followed, aloneRate, followedRate, cpuAlone, cpuFollowed };
    } finally {
      await streams.close();
    }
  } finally {
    agent.destroy();
    await server.stop();
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return round(percentileOfSorted(sorted, 50), 2);
}

try {
  const root = await rootToken(trees[0]!);
  const results: Round[] = [];
  for (let r = 0; r < rounds; r += 1) {
    // Alternate which tree goes first, so neither always meets the warmer database.
    const order = r % 2 === 0 ? trees : [...trees].reverse();
    for (const tree of order) results.push(await runRound(tree, root, `${r}-${trees.indexOf(tree)}`));
  }
  for (const [i, tree] of trees.entries()) {
    const mine = results.filter((result) => result.tree === tree);
    const m = (pick: (result: Round) => number) => median(mine.map(pick));
    console.log(
      `tree ${i} (${tree}): medians one at a time ${m((x) => x.alone)} -> ${m((x) => x.followed)} ms (${m((x) => x.followed / x.alone)}x); ` +
        `${rate}/s ${m((x) => x.aloneRate)} -> ${m((x) => x.followedRate)} ms (${m((x) => x.followedRate / x.aloneRate)}x); ` +
        `server CPU per create ${m((x) => x.cpuAlone)} -> ${m((x) => x.cpuFollowed)} ms`,
    );
  }
} finally {
  await stopAllChildren();
  await database.drop();
}
