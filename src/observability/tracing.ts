import {
  createContextKey,
  defaultTextMapGetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { ExportResultCode, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type SpanExporter,
} from "@opentelemetry/sdk-trace";
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_RPC_METHOD,
  ATTR_RPC_STATUS_CODE,
  ATTR_RPC_SYSTEM_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
} from "@opentelemetry/semantic-conventions";
import type { Knex } from "knex";
import type { CurrentTrace, TraceFields } from "../logger.js";
import { traceKnexQueries } from "./knex-tracing.js";

/**
 * OpenTelemetry traces, exported as OTLP/JSON over HTTP: a server span per call and a client span
 * per database query made inside one. This module (and through it every OpenTelemetry package) is
 * loaded only when an endpoint is configured: app.ts imports it dynamically, and the edge knows it
 * by its types alone, so with tracing off no call pays for it.
 *
 * Nothing is registered globally (no global tracer provider, context manager or propagator): the
 * registry may run more than once in a process (tests, embedding), each with its own endpoint, and
 * close() must leave nothing behind. Spans are made through this provider's tracer and parented
 * through this context manager explicitly.
 */

/** A call as its server span begins: the HTTP request, and the client it came from. */
export interface IncomingCall {
  /** The HTTP method. */
  readonly method: string;
  readonly httpVersion: 1 | 2;
  /** Request headers by lower-case name: `traceparent` and `tracestate` continue a caller's trace. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * What is known of a call once it is over, in the access log's terms (CallObservation in
 * src/transport/call-observation.ts has these fields).
 */
export interface CallRecord {
  /** "rest", "connect", "grpc", "grpc-web", or "http" for answers given before any protocol. */
  readonly protocol: string;
  /** The RPC, "package.Service/Method"; undefined when the request matched none. */
  readonly method: string | undefined;
  /** REST: the route that matched, "GET /v1/entries/{did}". */
  readonly route: string | undefined;
  readonly requestId: string;
}

/** One call's server span. */
export interface ServerSpan {
  /** Its trace and span, for the call's access line. */
  readonly trace: TraceFields;
  /** Runs `handle` inside the span, so that what it starts (database queries) becomes its child. */
  run<T>(handle: () => T): T;
  /** The call is over: `code` is its outcome as a Connect code name, `status` the HTTP status sent. */
  end(call: CallRecord, code: string, status: number | undefined): void;
}

export interface ServerSpans {
  /** Starts the span of a call from `clientAddress`, continuing the caller's trace if it sent one. */
  start(call: IncomingCall, clientAddress: string): ServerSpan;
}

export interface TracingOptions {
  /** The OTLP/HTTP traces endpoint, the full URL (".../v1/traces"). */
  readonly endpoint: string;
  /** The `service.name` of the resource every span belongs to. */
  readonly serviceName: string;
  /** The share of calls without a caller's trace context that are traced (0 to 1). */
  readonly sampleRatio: number;
  /** Told when a batch of spans could not be exported (at most once a minute). */
  readonly onExportError: (error: Error | undefined) => void;
}

export interface Tracing {
  readonly serverSpans: ServerSpans;
  /** The trace of the call running now, for log lines written inside it. */
  readonly currentTrace: CurrentTrace;
  /**
   * Spans for the queries `knex` runs inside a traced call, labelled with the pool's name
   * ("primary", "replica-1"); untraced until close().
   */
  traceQueries(knex: Knex, pool: string): void;
  /** Stops tracing queries, exports the spans still buffered, and shuts the exporter down. */
  close(): Promise<void>;
}

/** How long close() waits for the last spans to be exported: an unreachable collector must not hold up shutdown. */
const CLOSE_LIMIT_MS = 5_000;
const EXPORT_ERROR_INTERVAL_MS = 60_000;
/** A call's trace fields, kept in its context so that a log line reads them without making any. */
const TRACE_FIELDS = createContextKey("registry trace fields");

/**
 * A tracer provider exporting to `options.endpoint` in batches, with an AsyncLocalStorage context
 * manager of its own through which the queries a call runs find its span.
 */
export function startTracing(options: TracingOptions): Tracing {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName })),
    // A caller's decision stands (its traceparent's sampled flag); of the calls that bring none,
    // the configured share is traced, chosen by trace id so every service keeps the same ones.
    sampler: new ParentBasedSampler({
      root: options.sampleRatio >= 1 ? new AlwaysOnSampler() : new TraceIdRatioBasedSampler(options.sampleRatio),
    }),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: reportingFailures(new OTLPTraceExporter({ url: options.endpoint }), options.onExportError) }),
    ],
  });
  const tracer = provider.getTracer("open-registry");
  const propagator = new W3CTraceContextPropagator();
  const stops: (() => void)[] = [];

  const serverSpans: ServerSpans = {
    start(call, clientAddress) {
      const parent = propagator.extract(ROOT_CONTEXT, call.headers, defaultTextMapGetter);
      const span = tracer.startSpan(
        spanNameOfHttp(call.method),
        { kind: SpanKind.SERVER, attributes: startAttributes(call, clientAddress) },
        parent,
      );
      const fields = traceFieldsOf(span);
      return new TracedCall(span, fields, trace.setSpan(parent, span).setValue(TRACE_FIELDS, fields), contextManager);
    },
  };

  return {
    serverSpans,
    currentTrace: () => contextManager.active().getValue(TRACE_FIELDS) as TraceFields | undefined,
    traceQueries(knex, pool) {
      stops.push(traceKnexQueries(knex, { tracer, activeContext: () => contextManager.active(), pool }));
    },
    async close() {
      for (const stop of stops.splice(0)) stop();
      const settled = await settleWithin(provider.shutdown(), CLOSE_LIMIT_MS);
      if (!settled) options.onExportError(new Error(`the last spans were not exported within ${CLOSE_LIMIT_MS} ms of shutdown`));
      contextManager.disable();
    },
  };
}

/** A span's ids as log lines carry them; an unsampled call's too, so logs of one request still join up across services. */
function traceFieldsOf(span: Span): TraceFields {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return Object.freeze({ trace_id: traceId, span_id: spanId, trace_flags: traceFlags.toString(16).padStart(2, "0") });
}

class TracedCall implements ServerSpan {
  constructor(
    private readonly span: Span,
    readonly trace: TraceFields,
    private readonly context: Context,
    private readonly contextManager: AsyncLocalStorageContextManager,
  ) {}

  run<T>(handle: () => T): T {
    return this.contextManager.with(this.context, handle);
  }

  end(call: CallRecord, code: string, status: number | undefined): void {
    const { span } = this;
    if (span.isRecording()) {
      if (call.method !== undefined) span.updateName(call.method);
      span.setAttributes(endAttributes(call, code, status));
      const fault = serverFaultOf(call.protocol, code, status);
      if (fault !== undefined) {
        span.setAttribute(ATTR_ERROR_TYPE, fault);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    span.end();
  }
}

const KNOWN_HTTP_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]);

/** HTTP's span name for a request that matched no RPC: the method ("HTTP" for an unknown one). */
function spanNameOfHttp(method: string): string {
  return KNOWN_HTTP_METHODS.has(method) ? method : "HTTP";
}

function startAttributes(call: IncomingCall, clientAddress: string): Attributes {
  const attributes: Attributes = {
    [ATTR_HTTP_REQUEST_METHOD]: KNOWN_HTTP_METHODS.has(call.method) ? call.method : "_OTHER",
    [ATTR_NETWORK_PROTOCOL_VERSION]: call.httpVersion === 2 ? "2" : "1.1",
  };
  if (!KNOWN_HTTP_METHODS.has(call.method)) attributes[ATTR_HTTP_REQUEST_METHOD_ORIGINAL] = call.method;
  if (clientAddress !== "") attributes[ATTR_CLIENT_ADDRESS] = clientAddress;
  const authority = call.headers[":authority"] ?? call.headers.host;
  if (typeof authority === "string") Object.assign(attributes, serverOf(authority));
  return attributes;
}

/** server.address and server.port from a Host (or :authority) value: "host", "host:port", "[::1]:port". */
function serverOf(authority: string): Attributes {
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(authority);
  if (match === null || match[1] === "") return {};
  const address = (match[1] as string).replace(/^\[|\]$/g, "");
  return match[2] === undefined
    ? { [ATTR_SERVER_ADDRESS]: address }
    : { [ATTR_SERVER_ADDRESS]: address, [ATTR_SERVER_PORT]: Number(match[2]) };
}

/** The RPC systems of the semantic conventions, by the access log's protocol names. */
const RPC_SYSTEMS: Readonly<Record<string, string>> = { grpc: "grpc", "grpc-web": "grpc", connect: "connectrpc" };

function endAttributes(call: CallRecord, code: string, status: number | undefined): Attributes {
  const attributes: Attributes = { "registry.protocol": call.protocol, "registry.request_id": call.requestId };
  const system = RPC_SYSTEMS[call.protocol];
  if (system !== undefined) attributes[ATTR_RPC_SYSTEM_NAME] = system;
  if (call.method !== undefined || system !== undefined) {
    // An RPC path this server does not have: the conventions' placeholder, not the caller's text.
    attributes[ATTR_RPC_METHOD] = call.method ?? "_OTHER";
    attributes[ATTR_RPC_STATUS_CODE] = statusCodeName(code);
  }
  if (call.route !== undefined) attributes[ATTR_HTTP_ROUTE] = call.route.slice(call.route.indexOf(" ") + 1);
  if (status !== undefined) attributes[ATTR_HTTP_RESPONSE_STATUS_CODE] = status;
  return attributes;
}

/**
 * A code as rpc.status_code carries it: gRPC's canonical name ("NOT_FOUND") on every protocol,
 * Connect's codes being the same set in lower case, so one query finds an outcome whichever
 * protocol carried it.
 */
function statusCodeName(code: string): string {
  return code === "canceled" ? "CANCELLED" : code.toUpperCase();
}

/**
 * The codes that are the server's failure rather than the caller's, as the semantic conventions
 * list them for gRPC and Connect server spans: a not_found or an invalid_argument is a correct
 * answer, and does not make the span an error.
 */
const SERVER_FAULT_CODES = new Set(["unknown", "deadline_exceeded", "unimplemented", "internal", "unavailable", "data_loss"]);

/** The span's error.type when the call failed on the server's side, else undefined. */
function serverFaultOf(protocol: string, code: string, status: number | undefined): string | undefined {
  if (RPC_SYSTEMS[protocol] !== undefined) return SERVER_FAULT_CODES.has(code) ? statusCodeName(code) : undefined;
  // REST (and answers before any protocol) follow HTTP's rule: a 5xx is the server's failure.
  return status !== undefined && status >= 500 ? String(status) : undefined;
}

/** The exporter, telling `onError` of failed exports, at most once an interval. */
function reportingFailures(exporter: SpanExporter, onError: (error: Error | undefined) => void): SpanExporter {
  let lastReport = -Infinity;
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && performance.now() - lastReport >= EXPORT_ERROR_INTERVAL_MS) {
          lastReport = performance.now();
          onError(result.error);
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * Waits for `work`, but no longer than `ms`: false when it did not settle in time. Its failure is
 * not the caller's (the exporter has reported it); closing goes on.
 */
async function settleWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  const settled = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    limit,
  ]);
  clearTimeout(timer);
  return settled;
}
