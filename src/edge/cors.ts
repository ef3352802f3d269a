import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { cors } from "@connectrpc/connect";

const ALLOWED_METHODS = [...new Set([...cors.allowedMethods, "GET", "POST", "DELETE", "OPTIONS"])].join(", ");
const ALLOWED_HEADERS = [...new Set([...cors.allowedHeaders, "Authorization"])].join(", ");
const EXPOSED_HEADERS = [
  ...new Set([...cors.exposedHeaders, "Retry-After", "RateLimit", "RateLimit-Policy", "Allow"]),
].join(", ");

/**
 * Lets browsers on other origins call Connect, gRPC-Web and REST routes, Authorization included.
 * Returns true when the request was a preflight and has been answered.
 */
export function applyCors(
  origins: readonly string[],
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
): boolean {
  const origin = req.headers.origin;
  if (typeof origin !== "string") return false;
  const allowAny = origins.includes("*");
  if (!allowAny && !origins.includes(origin)) return false;
  // Echoing the origin (rather than "*") keeps credentialed browser requests working.
  res.setHeader("access-control-allow-origin", origin);
  res.setHeader("vary", "Origin");
  res.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
  if (req.method !== "OPTIONS" || req.headers["access-control-request-method"] === undefined) return false;
  res.writeHead(204, {
    "access-control-allow-methods": ALLOWED_METHODS,
    "access-control-allow-headers": ALLOWED_HEADERS,
    "access-control-max-age": "7200",
  });
  res.end();
  return true;
}
