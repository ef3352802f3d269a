/**
 * Creates over gRPC: the counterpart of http-load.ts's `createLoad` for REST. h2load sends the same
 * body with every request, and each create needs a distinct signed entry, so this is a small
 * generator of its own on node:http2's client stream API: `connections` h2c sessions with
 * `streamsPerConnection` calls in flight each, every call a fresh pre-signed entry, already
 * encoded as a gRPC message (5-byte envelope + protobuf) before the clock starts. A call counts as
 * created only with HTTP 200 and `grpc-status: 0`.
 */
import http2 from "node:http2";
import { fromJson, toBinary, type JsonValue } from "@bufbuild/protobuf";
import { CreateEntryRequestSchema } from "../gen/registry/v1/registry_service_pb.js";
import type { CreateLoadResult } from "./http-load.js";
import { percentileOfSorted } from "./stats.js";

export const CREATE_ENTRY_PATH = "/registry.v1.RegistryService/CreateEntry";

/** A gRPC length-prefixed message: flag 0 (not compressed), big-endian length, the bytes. */
export function grpcEnvelope(message: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(5 + message.length);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

/** A REST create body (the entry's JSON) as the gRPC request carrying the same entry. */
export function grpcCreateBody(entryJson: string): Buffer {
  const request = fromJson(CreateEntryRequestSchema, { entry: JSON.parse(entryJson) as JsonValue });
  return grpcEnvelope(toBinary(CreateEntryRequestSchema, request));
}

export interface GrpcCreateLoadOptions {
  readonly url: string;
  readonly connections: number;
  readonly streamsPerConnection: number;
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
  readonly token: string;
}

interface CallOutcome {
  readonly ok: boolean;
  /** "HTTP 200 grpc-status 6: ..." or a transport error, for the report. */
  readonly detail: string;
  readonly transport: boolean;
}

function call(session: http2.ClientHttp2Session, token: string, body: Buffer): Promise<CallOutcome> {
  return new Promise((resolve) => {
    let status = 0;
    let grpcStatus: string | undefined;
    let grpcMessage = "";
    let received = 0;
    const stream = session.request({
      ":method": "POST",
      ":path": CREATE_ENTRY_PATH,
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${token}`,
    });
    const takeStatus = (headers: http2.IncomingHttpHeaders) => {
      if (headers["grpc-status"] !== undefined) grpcStatus = String(headers["grpc-status"]);
      if (headers["grpc-message"] !== undefined) grpcMessage = decodeURIComponent(String(headers["grpc-message"]));
    };
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
      takeStatus(headers); // a trailers-only answer carries its status here
    });
    stream.on("trailers", takeStatus);
    stream.on("data", (chunk: Buffer) => (received += chunk.length));
    stream.on("error", () => {});
    stream.once("close", () => {
      if (status === 0) {
        resolve({ ok: false, transport: true, detail: `stream closed without an answer (code ${stream.rstCode})` });
        return;
      }
      const ok = status === 200 && grpcStatus === "0" && received > 5;
      resolve({
        ok,
        transport: false,
        detail: `HTTP ${status} grpc-status ${grpcStatus ?? "(none)"}${grpcMessage === "" ? "" : `: ${grpcMessage}`}`,
      });
    });
    stream.end(body);
  });
}

function connect(url: string): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.once("connect", () => {
      session.off("error", reject);
      session.on("error", () => {});
      resolve(session);
    });
    session.once("error", reject);
  });
}

/**
 * Keeps `connections × streamsPerConnection` creates in flight for the warmup and then the measured
 * duration. `more()` signs another entry if the pool runs out, so the server never sees a duplicate.
 */
export async function grpcCreateLoad(
  options: GrpcCreateLoadOptions,
  pool: readonly Buffer[],
  more: () => Buffer,
): Promise<CreateLoadResult> {
  const sessions = await Promise.all(Array.from({ length: options.connections }, () => connect(options.url)));
  const measureFrom = performance.now() + options.warmupSeconds * 1000;
  const measureUntil = measureFrom + options.durationSeconds * 1000;
  let latencies = new Float64Array(1 << 15);
  let ok = 0;
  let next = 0;
  let signedDuringRun = 0;
  let notCreated = 0;
  let measuredFailures = 0;
  let transportErrors = 0;
  const statusCodes: Record<string, number> = {};
  const failureSamples: string[] = [];

  async function worker(session: http2.ClientHttp2Session): Promise<void> {
    for (;;) {
      const started = performance.now();
      if (started >= measureUntil) return;
      let body = pool[next++];
      if (body === undefined) {
        body = more();
        signedDuringRun++;
      }
      const outcome = await call(session, options.token, body);
      const ended = performance.now();
      const measured = started >= measureFrom && ended <= measureUntil;
      if (!outcome.ok) {
        notCreated++;
        if (failureSamples.length < 5) failureSamples.push(outcome.detail);
        if (!measured) continue;
        measuredFailures++;
        if (outcome.transport) transportErrors++;
        statusCodes[outcome.detail.slice(0, 30)] = (statusCodes[outcome.detail.slice(0, 30)] ?? 0) + 1;
        continue;
      }
      if (!measured) continue;
      if (ok === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[ok++] = ended - started;
    }
  }
  await Promise.all(sessions.flatMap((session) => Array.from({ length: options.streamsPerConnection }, () => worker(session))));
  await Promise.all(sessions.map((session) => new Promise<void>((resolve) => session.close(resolve))));
  const sorted = latencies.subarray(0, ok).sort();
  statusCodes["200 grpc-status 0"] = ok;
  return {
    requestsPerSecond: ok / options.durationSeconds,
    ok,
    seconds: options.durationSeconds,
    latencyP50Ms: percentileOfSorted(sorted, 50),
    latencyP99Ms: percentileOfSorted(sorted, 99),
    failures: measuredFailures,
    transportErrors,
    statusCodes,
    bodiesUsed: Math.min(next, pool.length),
    signedDuringRun,
    failureSamples,
    notCreatedTotal: notCreated,
  };
}
