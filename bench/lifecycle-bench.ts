/**
 * The rows of docs/lifecycle.md's requests, measured beside the creates: lifecycle actions per
 * second over REST with the log on (deprecate and undeprecate in turn on many names, each request
 * freshly signed with its own issuedAt, signed before the clock starts as the creates' entries
 * are), and the history of a name with 200 records, one request at a time, against a resolve
 * measured in the same loop.
 */
import { sign } from "node:crypto";
import { Agent, request as httpRequest } from "node:http";
import { brotliDecompressSync } from "node:zlib";
import { lifecycleSigningPayload, type LifecycleAction } from "../src/domain/action-payloads.js";
import { baseDid, nowToTheSecond, signedEntry, type BenchPublisher } from "./entry-signer.js";
import { signedWriteLoad, type CreateLoadResult, type HttpLoadOptions, type SignedRequest } from "./http-load.js";
import { percentileOfSorted, round } from "./stats.js";
import { measureLatency } from "./synthetic-entries.js";

/** Names acted on in turn: far more than the requests in flight, so one name never has two at once. */
export const LIFECYCLE_NAMES = 1_000;
/** The history row's name: 100 versions, then 100 actions on its first version. */
export const HISTORY_RECORDS = 200;

export interface LifecycleSigner {
  /** Requests from the next unsent one on, signed now; `commit(sent)` says how many were sent. */
  batch(count: number): { pool: SignedRequest[]; more: () => SignedRequest; signPerSecond: number; commit: (sent: number) => void };
  /** One request on `did` (as addressed), signed now. */
  one(did: string, action: LifecycleAction, reason: string): SignedRequest;
}

/**
 * Signs lifecycle requests as a controller would: `by` the publisher's did:key, `issuedAt` the
 * signing time, strictly later than every request signed before (the registry refuses any other
 * on the same name). Request i acts on name i mod LIFECYCLE_NAMES, deprecating it on even rounds
 * and undeprecating it on odd ones, so every request changes a version and writes a log record.
 */
export function createLifecycleSigner(publisher: BenchPublisher, names: readonly string[]): LifecycleSigner {
  let nextIndex = 0;
  let lastIssuedAt = 0;
  const issuedAt = () => {
    lastIssuedAt = Math.max(Date.now(), lastIssuedAt + 1);
    return new Date(lastIssuedAt).toISOString();
  };
  const one = (did: string, action: LifecycleAction, reason: string): SignedRequest => {
    const fields = { subject: did, action, reason, replacement: "", by: publisher.did, issuedAt: issuedAt() };
    const signature = sign(null, lifecycleSigningPayload(fields), publisher.privateKey).toString("base64url");
    const { subject: _, by: __, ...body } = fields;
    return {
      path: `/v1/entries/${did.replace("@", "%40")}/lifecycle`,
      body: JSON.stringify({ ...body, signature: `ed25519:${signature}` }),
    };
  };
  const at = (index: number): SignedRequest => {
    const round = Math.floor(index / names.length);
    const did = `${baseDid(names[index % names.length]!)}@1.0.0`;
    return round % 2 === 0 ? one(did, "deprecate", "bench: superseded by a later release") : one(did, "undeprecate", "");
  };
  return {
    one,
    batch(count) {
      const from = nextIndex;
      const started = performance.now();
      const pool = Array.from({ length: count }, (_, i) => at(from + i));
      const signPerSecond = count / ((performance.now() - started) / 1000);
      let extra = from + count;
      return {
        pool,
        more: () => at(extra++),
        signPerSecond,
        // The unsent requests are dropped: the next batch re-signs from the first of them, so
        // every name keeps alternating and every issuedAt stays later than the last.
        commit: (sent) => {
          nextIndex = from + sent;
        },
      };
    },
  };
}

export interface LifecycleSetup {
  readonly signer: LifecycleSigner;
  /** The bare DID whose history is read. */
  readonly historyDid: string;
  /** A version of it, resolved as the baseline. */
  readonly resolveDid: string;
}

/**
 * Creates the names the lifecycle row acts on and the name the history row reads, and waits until
 * the log's checkpoint holds every record of it (a history serves only what a checkpoint holds).
 */
export async function prepareLifecycle(url: string, token: string, publisher: BenchPublisher, tag: string): Promise<LifecycleSetup> {
  const names = Array.from({ length: LIFECYCLE_NAMES }, (_, i) => `life-${tag}-${i}`);
  const signer = createLifecycleSigner(publisher, names);
  const publishedAt = nowToTheSecond();
  let cursor = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let name = names[cursor++]; name !== undefined; name = names[cursor++]) {
        await post(url, token, { path: "/v1/entries", body: JSON.stringify(signedEntry(publisher, name, "1.0.0", publishedAt)) }, 201);
      }
    }),
  );
  const historyName = `history-${tag}`;
  const versions = HISTORY_RECORDS / 2;
  for (let patch = 0; patch < versions; patch++) {
    const entry = signedEntry(publisher, historyName, `1.0.${patch}`, publishedAt);
    await post(url, token, { path: "/v1/entries", body: JSON.stringify(entry) }, 201);
  }
  const first = `${baseDid(historyName)}@1.0.0`;
  for (let action = 0; action < HISTORY_RECORDS - versions; action++) {
    const request = action % 2 === 0 ? signer.one(first, "deprecate", "bench: superseded") : signer.one(first, "undeprecate", "");
    await post(url, token, request, 200);
  }
  await untilCheckpointed(url);
  const setup = { signer, historyDid: baseDid(historyName), resolveDid: first };
  await readHistory(url, setup.historyDid);
  return setup;
}

export interface HistoryRun {
  /** The answer's time to its last byte, brotli as browsers ask, as h2load times every other row. */
  readonly p50Ms: number;
  readonly p95Ms: number;
  /** The same read through node's fetch and `response.json()`: what that client's decoding adds. */
  readonly fetchP50Ms: number;
  readonly fetchP95Ms: number;
  readonly baselineP50Ms: number;
  readonly baselineP95Ms: number;
  readonly samples: number;
}

/**
 * One run of the history row: the history to its last byte, the history through fetch, and the
 * baseline resolve to its last byte, each `samples` calls one at a time after `warmup` unmeasured
 * ones. Every history answer, however timed, must hold all its records: checked off the clock.
 */
export async function runHistory(url: string, setup: LifecycleSetup, samples: number, warmup: number): Promise<HistoryRun> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const historyUrl = `${url}/v1/entries/${setup.historyDid}/history`;
    const history = await timeToLastByte(agent, historyUrl, { samples, warmup }, checkHistoryBody);
    const fetched = await measureLatency(() => readHistory(url, setup.historyDid), { samples, warmup });
    const resolveUrl = `${url}/v1/entries/${setup.resolveDid.replace("@", "%40")}`;
    const baseline = await timeToLastByte(agent, resolveUrl, { samples, warmup }, () => {});
    return {
      p50Ms: history.p50Ms,
      p95Ms: history.p95Ms,
      fetchP50Ms: fetched.p50Ms,
      fetchP95Ms: fetched.p95Ms,
      baselineP50Ms: baseline.p50Ms,
      baselineP95Ms: baseline.p95Ms,
      samples,
    };
  } finally {
    agent.destroy();
  }
}

/** GETs `url` over keep-alive HTTP/1.1, timing each call to the answer's last byte; `check` runs on each body after. */
async function timeToLastByte(
  agent: Agent,
  url: string,
  options: { samples: number; warmup: number },
  check: (body: Buffer, encoding: string | undefined) => void,
): Promise<{ p50Ms: number; p95Ms: number }> {
  const times = new Float64Array(options.samples);
  for (let i = -options.warmup; i < options.samples; i++) {
    const started = performance.now();
    const { status, body, encoding } = await getBytes(agent, url);
    const took = performance.now() - started;
    if (status !== 200) throw new Error(`${url}: ${status}`);
    check(body, encoding);
    if (i >= 0) times[i] = took;
  }
  times.sort();
  return { p50Ms: round(percentileOfSorted(times, 50), 2), p95Ms: round(percentileOfSorted(times, 95), 2) };
}

function getBytes(agent: Agent, url: string): Promise<{ status: number; body: Buffer; encoding: string | undefined }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { agent, headers: { "accept-encoding": "br" } }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks), encoding: response.headers["content-encoding"] }),
      );
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end();
  });
}

function checkHistoryBody(body: Buffer, encoding: string | undefined): void {
  const text = (encoding === "br" ? brotliDecompressSync(body) : body).toString("utf8");
  const records = (JSON.parse(text) as { records?: unknown[] }).records;
  if (records?.length !== HISTORY_RECORDS)
    throw new Error(`a history answer held ${records?.length ?? 0} records, expected ${HISTORY_RECORDS}`);
}

/** One run of the lifecycle row: `connections` requests in flight, each a fresh signed action. */
export async function runLifecycleLoad(
  options: HttpLoadOptions,
  token: string,
  setup: LifecycleSetup,
  poolSize: number,
): Promise<CreateLoadResult & { readonly signPerSecond: number }> {
  // More in flight than names would put two requests on one name at once, and the later one
  // could arrive first: a refused issuedAt, not a measure.
  if (options.connections >= LIFECYCLE_NAMES)
    throw new Error(`lifecycle load: ${options.connections} in flight needs more than ${LIFECYCLE_NAMES} names`);
  const { pool, more, signPerSecond, commit } = setup.signer.batch(poolSize);
  const result = await signedWriteLoad(options, token, 200, pool, more);
  commit(result.bodiesUsed + result.signedDuringRun);
  return { ...result, signPerSecond };
}

async function readHistory(url: string, did: string): Promise<void> {
  const body = (await getJson(`${url}/v1/entries/${did}/history`)) as { records?: unknown[] };
  if (body.records?.length !== HISTORY_RECORDS) {
    throw new Error(`history of ${did}: ${body.records?.length ?? 0} records, expected ${HISTORY_RECORDS}`);
  }
}

/** Until the latest checkpoint covers every record of the log. */
async function untilCheckpointed(url: string): Promise<void> {
  const { size } = (await getJson(`${url}/v1/changes?limit=1`)) as { size: string };
  for (let attempt = 0; attempt < 600; attempt++) {
    const { treeSize } = (await getJson(`${url}/v1/log/checkpoint`)) as { treeSize: string };
    if (BigInt(treeSize) >= BigInt(size)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the log's checkpoint did not reach ${size} records within 30 s`);
}

async function post(url: string, token: string, request: SignedRequest, expected: number): Promise<void> {
  const response = await fetch(`${url}${request.path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: request.body,
  });
  const text = await response.text();
  if (response.status !== expected) throw new Error(`POST ${request.path}: ${response.status} ${text.slice(0, 300)}`);
}

async function getJson(url: string): Promise<unknown> {
  const response = await fetch(url);
  const json = (await response.json()) as unknown;
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}
