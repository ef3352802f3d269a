import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHUTDOWN_LINGER_MS } from "../../src/transport/protocol-server.js";
import { childEnv, freePort, runCli, startServerProcess, temporaryDirectory, type ServerProcess } from "../support/child-processes.js";
import { createPublisher, type TestPublisher } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * SIGTERM to a real `registry serve` process while 200 creates are in flight (issue 9, defect 4).
 * Every request the client had finished sending before the signal must be answered: with its
 * result, or with a refusal that says it was not processed (503 with Connection: close, or on
 * HTTP/2 a GOAWAY or REFUSED_STREAM). On loopback, bytes handed to the kernel before kill() are
 * in the server's receive queue before the signal is even sent. Nor may a request be reset on a
 * connection the server had taken (a reused keep-alive connection, an HTTP/2 session that had its
 * SETTINGS): whatever the server reads there, whenever it came, it answers or refuses. The one
 * close it may make there is an idle HTTP/1.1 keep-alive connection's FIN, a linger into its
 * shutdown; a request sent after that may cross the FIN (see isServerReset). Only a connection
 * opened after the signal may meet a closed port (refused, or reset in the backlog).
 */

const REQUESTS = 200;
const SIGNAL_AFTER_ANSWERS = 40;
const ROUNDS = 3;
const STARTUP_MS = 120_000;

let db: TestDatabase | undefined;
let dataDir: { path: string; remove(): Promise<void> } | undefined;
let env: NodeJS.ProcessEnv;
let publisher: TestPublisher;
let rootToken: string;
let server: ServerProcess | undefined;

beforeAll(async () => {
  publisher = await createPublisher();
  db = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
  if (db === undefined) dataDir = await temporaryDirectory("registry-shutdown-");
  // One publisher sends every create: its write limit would answer some of them 429.
  const limitsOff = { WRITE_RATE_LIMIT_RPS: "0" };
  env = childEnv(db === undefined ? { ...limitsOff, REGISTRY_DATA_DIR: dataDir!.path } : { ...limitsOff, DATABASE_URL: db.url });
  // Before any server runs: the embedded database belongs to one process at a time. Opening it
  // (and migrating) takes the CLI as long as it takes a server to start, so it gets the same time.
  const created = await runCli(["root-token", "create", "--subject", publisher.did, "--scopes", "registry.publish.skill"], env, STARTUP_MS);
  expect(created.code, created.stderr).toBe(0);
  rootToken = created.stdout.trim();
}, STARTUP_MS);

afterAll(async () => {
  await server?.stop(20_000).catch(() => {});
  await db?.drop();
  await dataDir?.remove();
});

/**
 * What became of one request; when (performance.now()) the client had finished sending it, and
 * (HTTP/1.1) when it handed it to a connection, before any of its bytes could reach the kernel;
 * whether it went on a connection the server had already taken (a reused keep-alive connection,
 * an HTTP/2 session whose SETTINGS arrived), where a reset is the server's doing whenever it came
 * unless it met the server's FIN (`endedByServer`, see isServerReset).
 */
type Outcome = { sentAt?: number; handedOverAt?: number; serverConnection?: boolean; endedByServer?: boolean } & (
  | { kind: "answered"; status: number; connection?: string }
  | { kind: "refused"; why: string }
  | { kind: "not sent"; why: string }
  | { kind: "reset"; why: string }
);

/** Sends all requests at once; `onAnswer` runs as each answer completes. */
interface Load {
  run(bodies: string[], onAnswer: () => void): Promise<Outcome[]>;
  close(): void;
}

/** HTTP/1.1 through a keep-alive agent, as a proxy or SDK pool would send them. */
function http1Load(url: string, token: string, maxSockets: number): Load {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  // node's agent flags reuse (request.reusedSocket) only for sockets that were free when asked for.
  const answeredOn = new WeakSet<net.Socket>();
  const send = (body: string, onAnswer: () => void) =>
    new Promise<Outcome>((resolve) => {
      let sentAt: number | undefined;
      let socket: net.Socket | undefined;
      let reused = false;
      let handedOverAt: number | undefined;
      const request = http.request(`${url}/v1/entries`, {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", authorization: `Bearer ${token}`, "content-length": Buffer.byteLength(body) },
      });
      // Emitted once the whole request has been handed to the operating system.
      request.on("finish", () => (sentAt = performance.now()));
      // Emitted just before the request is written to the socket.
      request.on("socket", (assigned) => {
        handedOverAt = performance.now();
        socket = assigned;
        reused = answeredOn.has(assigned);
      });
      request.on("response", (response) => {
        response.resume();
        response.on("end", () => {
          if (socket !== undefined) answeredOn.add(socket);
          onAnswer();
          resolve({ kind: "answered", status: response.statusCode ?? 0, connection: response.headers.connection, sentAt, handedOverAt });
        });
        response.on("error", (error) => resolve({ kind: "reset", why: `response: ${explain(error)}`, sentAt, serverConnection: true }));
      });
      request.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code === "ECONNREFUSED") resolve({ kind: "not sent", why: error.code });
        // readableEnded: the server's FIN had been read (a reset would be "read ECONNRESET" instead).
        else
          resolve({ kind: "reset", why: explain(error), sentAt, serverConnection: reused, endedByServer: socket?.readableEnded === true });
      });
      request.end(body);
    });
  return {
    run: (bodies, onAnswer) => Promise.all(bodies.map((body) => send(body, onAnswer))),
    close: () => agent.destroy(),
  };
}

/**
 * HTTP/2 streams: all on one session, as a gRPC channel sends them, or each on its own session, as
 * short-lived clients (a CLI, a serverless function) do.
 */
function http2Load(url: string, token: string, sessionPerRequest: boolean): Load {
  const sessions = new Set<http2.ClientHttp2Session>();
  const established = new WeakSet<http2.ClientHttp2Session>();
  const connect = () => {
    const session = http2.connect(url);
    sessions.add(session);
    session.once("remoteSettings", () => established.add(session));
    session.on("error", () => {});
    session.on("close", () => sessions.delete(session));
    return session;
  };
  const shared = sessionPerRequest ? undefined : connect();
  const send = (body: string, onAnswer: () => void) =>
    new Promise<Outcome>((resolve) => {
      const session = shared ?? connect();
      const done = (outcome: Outcome) => {
        resolve(outcome);
        if (session !== shared) session.close();
      };
      let sentAt: number | undefined;
      let status = 0;
      let stream: http2.ClientHttp2Stream;
      try {
        stream = session.request({
          ":method": "POST",
          ":path": "/v1/entries",
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
        });
      } catch (error) {
        done({ kind: "not sent", why: explain(error) });
        return;
      }
      stream.on("finish", () => (sentAt = performance.now()));
      stream.on("response", (headers) => (status = Number(headers[":status"])));
      stream.resume();
      stream.on("end", () => {
        onAnswer();
        done({ kind: "answered", status, sentAt });
      });
      stream.on("error", (error: NodeJS.ErrnoException) => {
        const cause = (error.cause as NodeJS.ErrnoException | undefined)?.code;
        // RFC 9113 §8.7: REFUSED_STREAM, and streams above a GOAWAY's last stream id, were not processed.
        if (stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM || error.code === "ERR_HTTP2_GOAWAY_SESSION") {
          done({ kind: "refused", why: explain(error), sentAt });
        } else if (error.code === "ECONNREFUSED" || cause === "ECONNREFUSED") {
          done({ kind: "not sent", why: "ECONNREFUSED" });
        } else {
          const why = `${explain(error)}${cause === undefined ? "" : ` (${cause})`}`;
          done({ kind: "reset", why, sentAt, serverConnection: established.has(session) });
        }
      });
      stream.on("close", () =>
        done({
          kind: "reset",
          why: `stream closed without an answer (rstCode ${stream.rstCode})`,
          sentAt,
          serverConnection: established.has(session),
        }),
      );
      stream.end(body);
    });
  return {
    run: (bodies, onAnswer) => Promise.all(bodies.map((body) => send(body, onAnswer))),
    close: () => {
      for (const session of sessions) session.destroy();
    },
  };
}

/** An HTTP/1.1 connection left idle after one request, as keep-alive pools hold them. */
async function idleHttp1Connection(url: string) {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  const seen = { closedByServer: false, error: undefined as string | undefined };
  socket.on("end", () => (seen.closedByServer = true));
  socket.on("error", (error) => (seen.error = explain(error)));
  const answered = new Promise<void>((resolve) => socket.once("data", () => resolve()));
  socket.write("GET /healthz HTTP/1.1\r\nHost: registry\r\n\r\n");
  await answered;
  return { seen, close: () => socket.destroy() };
}

/** An HTTP/2 session left idle after one request, as gRPC channels hold them. */
async function idleHttp2Session(url: string) {
  const session = http2.connect(url);
  const seen = { goaway: false, error: undefined as string | undefined };
  session.on("goaway", () => (seen.goaway = true));
  session.on("error", (error) => (seen.error = explain(error)));
  await new Promise<void>((resolve, reject) => {
    const stream = session.request({ ":path": "/healthz" });
    stream.resume();
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  return { seen, close: () => session.destroy() };
}

function explain(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code === undefined ? message : `${code}: ${message}`;
}

async function accessToken(url: string): Promise<string> {
  const response = await fetch(`${url}/v1/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ scopes: ["registry.publish.skill"], ttlSeconds: 900 }),
  });
  const body = (await response.json()) as { accessToken?: string };
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body.accessToken!;
}

interface RoundReport {
  /** Requests reset although sent before the signal or on a connection the server had taken: must be none. */
  readonly serverResets: number;
  readonly tally: Record<string, number>;
  readonly wrongAnswers: Outcome[];
  readonly exit: { code: number | null; signal: NodeJS.Signals | null; afterMs: number };
  readonly idleHttp1: { closedByServer: boolean; error: string | undefined };
  readonly idleHttp2: { goaway: boolean; error: string | undefined };
}

async function runRound(round: number, makeLoad: (url: string, token: string) => Load): Promise<RoundReport> {
  server = await startServerProcess([], await freePort(), env, STARTUP_MS);
  const running = server;
  const token = await accessToken(running.url);
  const prefix = `shutdown-${Date.now().toString(36)}-${round}`;
  const bodies = await Promise.all(
    Array.from({ length: REQUESTS }, async (_, i) => JSON.stringify(await publisher.entry(`${prefix}-${i}`, "1.0.0"))),
  );
  const idleHttp1 = await idleHttp1Connection(running.url);
  const idleHttp2 = await idleHttp2Session(running.url);
  const load = makeLoad(running.url, token);
  let answers = 0;
  let signalAt = Infinity;
  let stopping: ReturnType<ServerProcess["stop"]> | undefined;
  const outcomes = await load.run(bodies, () => {
    answers += 1;
    if (answers !== SIGNAL_AFTER_ANSWERS) return;
    signalAt = performance.now();
    stopping = running.stop(30_000);
  });
  const exit = await (stopping ?? running.stop(30_000));
  server = undefined;
  load.close();
  idleHttp1.close();
  idleHttp2.close();
  const idleCloseFrom = earliestIdleClose(outcomes, signalAt);
  return {
    serverResets: outcomes.filter((o) => isServerReset(o, signalAt, idleCloseFrom)).length,
    tally: tallyOf(outcomes, signalAt, idleCloseFrom),
    wrongAnswers: outcomes.filter(isWrongAnswer),
    exit,
    idleHttp1: idleHttp1.seen,
    idleHttp2: idleHttp2.seen,
  };
}

const LOADS: Array<[string, (url: string, token: string) => Load]> = [
  ["HTTP/1.1 keep-alive, one connection per request", (url, token) => http1Load(url, token, Infinity)],
  ["HTTP/1.1 keep-alive, a pool of 16 connections", (url, token) => http1Load(url, token, 16)],
  ["HTTP/2, one session", (url, token) => http2Load(url, token, false)],
  ["HTTP/2, a session per request", (url, token) => http2Load(url, token, true)],
];

describe.each(LOADS)("SIGTERM mid-load over %s", (name, makeLoad) => {
  it(
    `answers or refuses every request sent before the signal, resetting none, in ${ROUNDS} rounds`,
    async () => {
      const rounds: RoundReport[] = [];
      for (let round = 1; round <= ROUNDS; round++) rounds.push(await runRound(round, makeLoad));
      const report = JSON.stringify(rounds, null, 1);
      console.info(`${name}: ${rounds.map((r) => JSON.stringify(r.tally)).join(" | ")}`);
      expect(
        rounds.map((r) => r.serverResets),
        report,
      ).toEqual(rounds.map(() => 0));
      for (const r of rounds) {
        expect(r.exit, report).toMatchObject({ code: 0, signal: null });
        expect(r.wrongAnswers, report).toEqual([]);
        expect(r.tally["answered 201"] ?? 0, report).toBeGreaterThanOrEqual(SIGNAL_AFTER_ANSWERS);
        // Idle keep-alive clients are told to go: a FIN (not a reset), or a GOAWAY.
        expect(r.idleHttp1, report).toEqual({ closedByServer: true, error: undefined });
        expect(r.idleHttp2, report).toEqual({ goaway: true, error: undefined });
      }
    },
    ROUNDS * 90_000,
  );
});

/**
 * The earliest moment the server may have closed an idle keep-alive connection: a linger after its
 * shutdown began. That was after the signal, and after it read every request it went on to process
 * (a 201: requests read while shutting down are refused), each after the client handed it over.
 */
function earliestIdleClose(outcomes: readonly Outcome[], signalAt: number): number {
  const processed = outcomes.filter((o) => o.kind === "answered" && o.status === 201).map((o) => o.handedOverAt ?? -Infinity);
  return Math.max(signalAt, ...processed) + SHUTDOWN_LINGER_MS;
}

/**
 * Whether a reset is the server's doing: sent before the signal, the request was in the server's
 * receive queue before the signal; on a connection the server had taken, it was the server's to
 * answer, unless it met the FIN of an idle close. A request sent before the earliest such close
 * was in the server's receive queue before it; one sent later may have crossed the FIN, as on any
 * HTTP/1.1 keep-alive connection (RFC 9112 §9.3.1), and its reset proves nothing.
 */
function isServerReset(outcome: Outcome, signalAt: number, idleCloseFrom: number): boolean {
  if (outcome.kind !== "reset") return false;
  if ((outcome.sentAt ?? Infinity) < signalAt) return true;
  return outcome.serverConnection === true && !mayHaveCrossedIdleClose(outcome, idleCloseFrom);
}

function mayHaveCrossedIdleClose(outcome: Outcome, idleCloseFrom: number): boolean {
  return outcome.endedByServer === true && (outcome.sentAt ?? Infinity) >= idleCloseFrom;
}

/** An answer is the create's own result, or a 503 (with Connection: close on HTTP/1.1) saying it was not processed. */
function isWrongAnswer(outcome: Outcome): boolean {
  if (outcome.kind !== "answered" || outcome.status === 201) return false;
  return outcome.status !== 503 || (outcome.connection !== undefined && outcome.connection !== "close");
}

function tallyOf(outcomes: readonly Outcome[], signalAt: number, idleCloseFrom: number): Record<string, number> {
  const tally: Record<string, number> = {};
  for (const outcome of outcomes) {
    const when =
      outcome.sentAt === undefined ? "never sent" : outcome.sentAt < signalAt ? "sent before the signal" : "sent after the signal";
    const where =
      outcome.serverConnection !== true
        ? ""
        : mayHaveCrossedIdleClose(outcome, idleCloseFrom)
          ? ", on a keep-alive connection after it may have been closed as idle"
          : ", on a connection the server had taken";
    const key = outcome.kind === "answered" ? `answered ${outcome.status}` : `${outcome.kind} (${when}${where}): ${outcome.why}`;
    tally[key] = (tally[key] ?? 0) + 1;
  }
  return tally;
}
