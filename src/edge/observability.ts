import { randomUUID } from "node:crypto";
import { ConnectError, type ContextValues, type Interceptor, type StreamResponse } from "@connectrpc/connect";
import type { AccessRecord, Logger } from "../logger.js";
import type { RegistryMetrics } from "../observability/metrics.js";
import type { ServerSpans } from "../observability/tracing.js";
import { createTrustedProxyTest, type ClientAddressResolver } from "./client-address.js";
import { callObservationKey, type CallObservation } from "../transport/call-observation.js";
import type { ExchangeObserver, HttpExchange, NodeRequest } from "../transport/http-exchange.js";
import { codeName } from "../transport/status-codes.js";

/** Records the authenticated caller of the call whose context values these are. */
export function notePrincipal(values: ContextValues, subject: string): void {
  const observation = values.get(callObservationKey);
  if (observation !== undefined) observation.principal = subject;
}

/**
 * Calls handed to Connect's adapter (streaming methods): their observation by node
 * request, for the adapter's context values, since the adapter sees node objects, not exchanges.
 */
const adapterCalls = new WeakMap<NodeRequest, CallObservation>();

export function handToAdapter(req: NodeRequest, observation: CallObservation): void {
  adapterCalls.set(req, observation);
}

/** Context values for a call the adapter serves, with its observation added. */
export function withAdapterObservation(values: ContextValues, req: NodeRequest): ContextValues {
  const observation = adapterCalls.get(req);
  if (observation !== undefined) values.set(callObservationKey, observation);
  return values;
}

/**
 * Records the outcome of calls Connect's adapter serves (the unary path records its own): for
 * streams, how the stream ended, with "canceled" when the client left before its end.
 */
export function createAdapterOutcomeInterceptor(): Interceptor {
  return (next) => async (request) => {
    const observation = request.contextValues.get(callObservationKey);
    if (observation === undefined) return next(request);
    try {
      const response = await next(request);
      if (!response.stream) {
        observation.code = "ok";
        return response;
      }
      return { ...response, message: recordStreamEnd(response, request.signal, observation) } as StreamResponse;
    } catch (error) {
      observation.code = codeName(ConnectError.from(error).code);
      throw error;
    }
  };
}

async function* recordStreamEnd(response: StreamResponse, signal: AbortSignal, observation: CallObservation) {
  let ended = false;
  try {
    yield* response.message;
    // A handler may end its stream quietly when told the client left (health Watch does).
    observation.code = signal.aborted ? "canceled" : "ok";
    ended = true;
  } catch (error) {
    observation.code = codeName(ConnectError.from(error).code);
    ended = true;
    throw error;
  } finally {
    if (!ended) observation.code = "canceled";
  }
}

export interface CallObserverOptions {
  /** Access lines go here; undefined writes none (ACCESS_LOG=false). */
  readonly accessLog?: Logger;
  readonly metrics?: RegistryMetrics;
  /** Proxies (TRUST_PROXY) whose X-Request-Id is taken. */
  readonly trustProxy: readonly string[];
  readonly resolveClientAddress: ClientAddressResolver;
  /** Server spans (OpenTelemetry), when tracing is on. */
  readonly tracer?: ServerSpans;
}

export interface CallObserver extends ExchangeObserver {
  /** Gives the exchange its request id, and puts it on the answer, whatever the answer. */
  begin(exchange: HttpExchange): void;
  /**
   * Runs a call's handling inside a new server span, ended when the call is; undefined when
   * tracing is off, so that calls then pay for nothing, not even a closure.
   */
  readonly traced?: <T>(exchange: HttpExchange, handle: () => T) => T;
}

/** A request id a proxy may hand us: a token that cannot break a log line or a header. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_LOGGED_PATH = 200;

/**
 * Request ids, access lines, call metrics and (when tracing is on) server spans, from each
 * exchange's observation. This is the hot path: one object per access line, one histogram
 * observation, and nothing made per call that could be shared.
 */
export function createCallObserver(options: CallObserverOptions): CallObserver {
  const { accessLog, metrics, resolveClientAddress, tracer } = options;
  const isTrusted = createTrustedProxyTest(options.trustProxy);
  const trustedPeer = (address: string | undefined) => address !== undefined && isTrusted(address);
  return {
    traced:
      tracer === undefined
        ? undefined
        : (exchange, handle) => {
            const observation = exchange.observation;
            if (observation.client === "") observation.client = resolveClientAddress(exchange);
            observation.span = tracer.start(exchange, observation.client);
            return observation.span.run(handle);
          },
    begin(exchange) {
      const observation = exchange.observation;
      const offered = exchange.headers["x-request-id"];
      observation.requestId =
        typeof offered === "string" && trustedPeer(exchange.remoteAddress) && SANE_REQUEST_ID.test(offered) ? offered : randomUUID();
      exchange.setHeader("x-request-id", observation.requestId);
      if (accessLog !== undefined) observation.client = resolveClientAddress(exchange);
    },
    finished(exchange, status) {
      const observation = exchange.observation;
      if (observation.quiet) return;
      const ms = performance.now() - observation.startedAt;
      const code = observation.code ?? codeOfStatus(status);
      observation.span?.end(observation, code, status);
      const method = observation.method;
      metrics?.callFinished(observation.protocol, method ?? "unmatched", code, ms / 1000);
      if (accessLog === undefined) return;
      const trace = observation.span?.trace;
      const record: AccessRecord = {
        requestId: observation.requestId,
        protocol: observation.protocol,
        method,
        route: observation.route,
        path: method === undefined ? exchange.path.slice(0, MAX_LOGGED_PATH) : undefined,
        code,
        status,
        ms: Math.round(ms * 100) / 100,
        client: observation.client,
        principal: observation.principal,
        trace_id: trace?.trace_id,
        span_id: trace?.span_id,
        trace_flags: trace?.trace_flags,
      };
      accessLog.access(record);
    },
  };
}

/**
 * An answer no protocol code classified (a CORS preflight, a refused content type): the status
 * says whether it went well; which error it was, it cannot say for sure.
 */
function codeOfStatus(status: number | undefined): string {
  if (status === undefined) return "canceled";
  return status < 400 ? "ok" : "unknown";
}

/** How often at most the refusals of the front are summed up in the log. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

/**
 * Counts every connection the front refuses or times out, and logs them as one warning a minute
 * at most: the first of a quiet spell at once, the rest as counts per reason when the minute is
 * up. A flood must not turn into a flood of log lines.
 */
export function createRefusalReporter(logger: Logger, metrics: RegistryMetrics): (reason: string) => void {
  let pending: Record<string, number> | undefined;
  return (reason) => {
    metrics.connectionRefused(reason);
    if (pending !== undefined) {
      pending[reason] = (pending[reason] ?? 0) + 1;
      return;
    }
    logger.warn("connection refused or timed out", { reason });
    const counts: Record<string, number> = {};
    pending = counts;
    setTimeout(() => {
      pending = undefined;
      if (Object.keys(counts).length > 0)
        logger.warn("more connections refused or timed out", { lastMs: REFUSAL_LOG_INTERVAL_MS, byReason: counts });
    }, REFUSAL_LOG_INTERVAL_MS).unref();
  };
}
