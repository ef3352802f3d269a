import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import { applyCors } from "./cors.js";
import type { RequestListener } from "./protocol-server.js";
import { writeJson } from "./rest-transcoder.js";

export interface RequestPipelineOptions {
  readonly corsOrigins: readonly string[];
  /** Serves Connect, gRPC and gRPC-Web. */
  readonly rpc: ReturnType<typeof connectNodeAdapter>;
  /** The paths `rpc` serves ("/registry.v1.RegistryService/ResolveEntry", ...). */
  readonly rpcPaths: ReadonlySet<string>;
  /** Serves everything else: the REST routes, and the 404/405 answers. */
  readonly rest: ReturnType<typeof connectNodeAdapter>;
  /** Whether the service can serve: its database answers. */
  readonly isReady: () => Promise<boolean>;
}

/** What every request passes through before protocol handling: CORS, then liveness/readiness. */
export function createRequestPipeline(options: RequestPipelineOptions): RequestListener {
  return (req, res) => {
    if (applyCors(options.corsOrigins, req, res)) return;
    const path = (req.url ?? "/").split("?", 1)[0];
    if (path === "/healthz" && isRead(req)) {
      writeJson(res, 200, { status: "ok" });
      return;
    }
    if (path === "/readyz" && isRead(req)) {
      void ready(options, res);
      return;
    }
    if (options.rpcPaths.has(path ?? "")) options.rpc(req, res);
    else options.rest(req, res);
  };
}

function isRead(req: IncomingMessage | Http2ServerRequest): boolean {
  return req.method === "GET" || req.method === "HEAD";
}

async function ready(options: RequestPipelineOptions, res: ServerResponse | Http2ServerResponse) {
  const ok = await options.isReady().catch(() => false);
  if (ok) writeJson(res, 200, { status: "ready" });
  else writeJson(res, 503, { code: "unavailable", message: "the database is unavailable", details: [] });
}
