import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { CHANGE_STREAM_PATH } from "./change-stream.js";
import { handResponseToAdapter } from "./feed-stream-guard.js";
import { applyCors } from "./cors.js";
import type { LogFiles } from "./log-files.js";
import type { ErrorLogger } from "./error-mapping.js";
import {
  exchangeFromNode,
  exchangeFromStream,
  type ExchangeHooks,
  type HttpExchange,
  type NodeRequest,
  type NodeResponse,
} from "../transport/http-exchange.js";
import { handToAdapter, type CallObserver } from "./observability.js";
import { createApiDocs } from "./openapi/api-docs.js";
import type { Explorer } from "./explorer/explorer-pages.js";
import { createOpenApiDocument } from "./openapi/openapi-document.js";
import { writeJson, type RestRoute } from "./rest-transcoder.js";
import { connectUnaryCodec, errorBody, serveConnectUnary } from "../transport/connect-protocol.js";
import { answerGrpcUnimplemented, grpcVariant, serveGrpcUnary } from "../transport/grpc-protocol.js";
import type { RpcContext } from "../transport/rpc-context.js";
import type { UnaryMethod } from "../transport/unary-method.js";

export interface RequestPipelineOptions {
  readonly corsOrigins: readonly string[];
  /** Runs unary calls for the RPC protocols. */
  readonly rpc: RpcContext;
  /** The unary methods served on gRPC, gRPC-Web and Connect, by path. */
  readonly unaryMethods: ReadonlyMap<string, UnaryMethod>;
  /** Every RPC path Connect's adapter serves: streaming methods, and anything the fast path leaves. */
  readonly adapterPaths: ReadonlySet<string>;
  /** Connect's node adapter, for streaming calls (health Watch, reflection). */
  readonly adapter: (req: NodeRequest, res: NodeResponse) => void;
  /**
   * Serves everything else: the REST routes, and the 404/405 answers. With its route table (and
   * error detail types), GET /openapi.json and /docs document those routes.
   */
  readonly rest: {
    handle(exchange: HttpExchange): Promise<void>;
    readonly routes?: readonly RestRoute[];
    readonly errorDetailTypes?: readonly DescMessage[];
  };
  /** Serves the transparency log's tiles and checkpoint (C2SP tlog-tiles); absent where it is not served. */
  readonly logFiles?: LogFiles;
  /** Serves the web explorer's pages (docs/explorer.md); absent where the registry is not served. */
  readonly explorer?: Explorer;
  /** Serves GET /v1/changes/stream (Server-Sent Events); absent where the change feed is not served. */
  readonly changeStream?: (exchange: HttpExchange) => Promise<void>;
  /** Whether the service can serve: its database answers. */
  readonly isReady: () => Promise<boolean>;
  readonly log: ErrorLogger;
  /** Request ids, access lines and call metrics; none when absent. */
  readonly observer?: CallObserver;
  /** Serves GET /metrics on this port (when no separate metrics port is configured). */
  readonly metrics?: { readonly contentType: string; render(): Promise<string> };
}

/** What the protocol server hands requests to: HTTP/1.1 requests, and HTTP/2 streams. */
export interface RequestHandlers {
  http1(req: NodeRequest, res: NodeResponse): void;
  http2(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, rawHeaders: string[]): void;
}

/** A path of the form "/package.Service/Method": a gRPC or Connect call, never a REST route. */
const RPC_PATH = /^\/[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+\/[A-Za-z_]\w*$/;

/**
 * Every request's way in: security and CORS headers, the probes, then the protocol. Unary calls on
 * gRPC, gRPC-Web and Connect go to their own small servers over the shared invoker; streaming
 * calls to Connect's adapter; the rest to the REST transcoder.
 */
export function createRequestPipeline(options: RequestPipelineOptions): RequestHandlers {
  const { observer, metrics } = options;
  const traced = observer?.traced;
  const { routes, errorDetailTypes = [] } = options.rest;
  // Built once, from the routes this server serves: a role-split server documents its own half.
  const docs = routes === undefined ? undefined : createApiDocs(createOpenApiDocument({ routes, errorDetailTypes }));

  function serve(exchange: HttpExchange): void {
    observer?.begin(exchange);
    exchange.setHeader("x-content-type-options", "nosniff");
    if (applyCors(options.corsOrigins, exchange)) return;
    const { path } = exchange;
    if ((path === "/healthz" || path === "/readyz") && (exchange.method === "GET" || exchange.method === "HEAD")) {
      exchange.observation.quiet = true;
      if (path === "/healthz") writeJson(exchange, 200, { status: "ok" });
      else void ready(options, exchange);
      return;
    }
    if (metrics !== undefined && path === "/metrics" && (exchange.method === "GET" || exchange.method === "HEAD")) {
      exchange.observation.quiet = true;
      void serveMetrics(metrics, exchange);
      return;
    }
    if (docs?.serve(exchange)) return;
    if (options.explorer?.serve(exchange)) return;
    // Traced, the handling runs in the call's span (its queries nest under it) from here on.
    const work = traced === undefined ? route(exchange, path) : traced(exchange, () => route(exchange, path));
    if (work !== undefined) {
      work.catch((error: unknown) => {
        options.log(error);
        exchange.observation.code = "internal";
        if (!exchange.done) writeJson(exchange, 500, { code: "internal", message: "internal error", details: [] });
      });
    }
  }

  function route(exchange: HttpExchange, path: string): Promise<void> | undefined {
    const target = options.unaryMethods.get(path);
    const contentType = exchange.header("content-type");
    if (target !== undefined) {
      const variant = grpcVariant(contentType);
      if (variant !== undefined && exchange.method === "POST") {
        return serveGrpcUnary(options.rpc, exchange, target, variant);
      }
      if (exchange.method === "GET" || (exchange.method === "POST" && connectUnaryCodec(contentType) !== undefined)) {
        return serveConnectUnary(options.rpc, exchange, target);
      }
    }
    if (target !== undefined || options.adapterPaths.has(path)) {
      const { req, res } = exchange.nodeObjects();
      const observation = exchange.observation;
      observation.protocol = rpcProtocolOf(contentType);
      observation.method = path.slice(1);
      handToAdapter(req, observation);
      handResponseToAdapter(req, res);
      options.adapter(req, res);
      return undefined;
    }
    if (RPC_PATH.test(path) && answerUnknownMethod(exchange, path, contentType)) return undefined;
    if (path === CHANGE_STREAM_PATH && exchange.method === "GET" && options.changeStream !== undefined)
      return options.changeStream(exchange);
    const logFile = options.logFiles?.(exchange);
    if (logFile !== undefined) return logFile;
    return options.rest.handle(exchange);
  }

  const hooks: ExchangeHooks = { observer, onWriteError: options.log };
  return {
    http1: (req, res) => serve(exchangeFromNode(req, res, hooks)),
    http2: (stream, headers, _flags, rawHeaders) => serve(exchangeFromStream(stream, headers, rawHeaders, hooks)),
  };
}

/** The RPC protocol a content type speaks, as the access log names it. */
function rpcProtocolOf(contentType: string | undefined): string {
  const variant = grpcVariant(contentType);
  if (variant === undefined) return "connect";
  return variant.web ? "grpc-web" : "grpc";
}

/**
 * A call to a method this server does not have is unimplemented, answered in the protocol the
 * caller speaks (judged by its content type), so its client reports it as such. Returns false
 * for requests that speak no RPC protocol: those get REST's 404.
 */
function answerUnknownMethod(exchange: HttpExchange, path: string, contentType: string | undefined): boolean {
  const variant = grpcVariant(contentType);
  if (variant !== undefined) {
    answerGrpcUnimplemented(exchange, variant, path);
    return true;
  }
  const connectStreaming = /^application\/connect\+(json|proto)/i.test(contentType ?? "");
  if (connectUnaryCodec(contentType) === undefined && !connectStreaming) return false;
  exchange.observation.protocol = "connect";
  exchange.observation.code = "unimplemented";
  const error = new ConnectError(`${path} is not a method this server implements`, Code.Unimplemented);
  // Connect clients read 404 as unimplemented; the body says so too.
  exchange.respond(404, { "content-type": "application/json" }, errorBody(error));
  return true;
}

async function serveMetrics(metrics: NonNullable<RequestPipelineOptions["metrics"]>, exchange: HttpExchange) {
  try {
    const text = await metrics.render();
    exchange.respond(200, { "content-type": metrics.contentType, "cache-control": "no-store" }, Buffer.from(text));
  } catch {
    writeJson(exchange, 500, { code: "internal", message: "metrics collection failed", details: [] });
  }
}

async function ready(options: RequestPipelineOptions, exchange: HttpExchange) {
  const ok = await options.isReady().catch(() => false);
  if (ok) writeJson(exchange, 200, { status: "ready" });
  else writeJson(exchange, 503, { code: "unavailable", message: "the database is unavailable", details: [] });
}
