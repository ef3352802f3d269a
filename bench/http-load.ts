/**
 * Creates over REST with autocannon (HTTP/1.1 keep-alive): h2load sends one body for every request,
 * and each create needs a distinct signed entry. grpc-create-load.ts is the gRPC counterpart.
 */
import autocannon, { type AutocannonResult } from "autocannon";

export interface HttpLoadOptions {
  readonly url: string;
  readonly connections: number;
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
}

export interface HttpLoadResult {
  readonly requestsPerSecond: number;
  /** Successful (2xx) responses in the measured window. */
  readonly ok: number;
  readonly seconds: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  /** Non-2xx responses, connection errors and timeouts in the measured window. */
  readonly failures: number;
  /** Connection errors and timeouts (no HTTP answer at all). */
  readonly transportErrors: number;
  readonly statusCodes: Record<string, number>;
}

function summarise(result: AutocannonResult): HttpLoadResult {
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count]));
  return {
    requestsPerSecond: result["2xx"] / result.duration,
    ok: result["2xx"],
    seconds: result.duration,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
    transportErrors: result.errors + result.timeouts,
    statusCodes,
  };
}

/** Where the load goes and for how long; the same for every phase. */
function runShape(options: HttpLoadOptions) {
  return {
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    warmup: { connections: options.connections, duration: options.warmupSeconds },
  };
}

export interface CreateLoadResult extends HttpLoadResult {
  /** Pre-signed bodies used; when the pool ran out, more were signed during the run. */
  readonly bodiesUsed: number;
  readonly signedDuringRun: number;
  /** The first few non-201 answers, for the report. */
  readonly failureSamples: readonly string[];
  /** Answers other than created (REST: 201; gRPC: grpc-status 0; lifecycle: 200), warmup included. */
  readonly notCreatedTotal: number;
}

/**
 * POSTs a fresh pre-signed entry per request. `more()` signs another entry if the pool runs out,
 * so a faster server never sees a duplicate (which would be a 409, not a create).
 */
export async function createLoad(
  options: HttpLoadOptions,
  token: string,
  pool: readonly string[],
  more: () => string,
): Promise<CreateLoadResult> {
  const asRequest = (body: string): SignedRequest => ({ path: "/v1/entries", body });
  return signedWriteLoad(options, token, 201, pool.map(asRequest), () => asRequest(more()));
}

/** One pre-signed write: where it goes and its JSON body. */
export interface SignedRequest {
  readonly path: string;
  readonly body: string;
}

/**
 * POSTs each pre-signed request of the pool once, in pool order, and counts an answer other than
 * `expectedStatus` as a failure. Requests are set up one after another, so with fewer in flight
 * than the distance between two requests on one name, each is answered before the next is sent.
 */
export async function signedWriteLoad(
  options: HttpLoadOptions,
  token: string,
  expectedStatus: number,
  pool: readonly SignedRequest[],
  more: () => SignedRequest,
): Promise<CreateLoadResult> {
  let next = 0;
  let signedDuringRun = 0;
  let failed = 0;
  const failureSamples: string[] = [];
  const result = await autocannon({
    ...runShape(options),
    requests: [
      {
        method: "POST",
        path: pool[0]?.path ?? "/",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        setupRequest: (request) => {
          let signed = pool[next++];
          if (signed === undefined) {
            signed = more();
            signedDuringRun++;
          }
          request.path = signed.path;
          request.body = signed.body;
          return request;
        },
        onResponse: (status, body) => {
          if (status === expectedStatus) return;
          failed++;
          if (failureSamples.length < 5) failureSamples.push(`${status} ${body.slice(0, 300)}`);
        },
      },
    ],
  });
  return {
    ...summarise(result),
    bodiesUsed: Math.min(next, pool.length),
    signedDuringRun,
    failureSamples,
    notCreatedTotal: failed,
  };
}
