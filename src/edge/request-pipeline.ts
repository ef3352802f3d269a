import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import { applyCors } from "./cors.js";
import type { RequestListener } from "./protocol-server.js";
import { writeJson } from "./rest-transcoder.js";

export interface RequestPipelineOptions {
  readonly corsOrigins: readonly string[];
  /** Serves Connect, gRPC and gRPC-Web, handing every other path to its own fallback (REST). */
  readonly rpc: ReturnType<typeof connectNodeAdapter>;
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
    options.rpc(req, res);
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
