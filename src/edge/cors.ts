import { cors } from "@connectrpc/connect";
import type { HttpExchange } from "../transport/http-exchange.js";

const ALLOWED_METHODS = [...new Set([...cors.allowedMethods, "GET", "POST", "DELETE", "OPTIONS"])].join(", ");
// W3C Trace Context and Baggage: a browser's instrumentation sends them to continue its trace here.
const TRACE_HEADERS = ["traceparent", "tracestate", "baggage"];
const ALLOWED_HEADERS = [...new Set([...cors.allowedHeaders, "Authorization", "If-None-Match", ...TRACE_HEADERS])].join(", ");
const EXPOSED_HEADERS = [
  ...new Set([...cors.exposedHeaders, "Retry-After", "RateLimit", "RateLimit-Policy", "Allow", "ETag", "X-Request-Id"]),
].join(", ");

/**
 * Lets browsers on other origins call Connect, gRPC-Web and REST routes, Authorization included.
 * Returns true when the request was a preflight and has been answered.
 */
export function applyCors(origins: readonly string[], exchange: HttpExchange): boolean {
  const origin = exchange.header("origin");
  if (origin === undefined) return false;
  if (!origins.includes("*") && !origins.includes(origin)) return false;
  // Echoing the origin (rather than "*") keeps credentialed browser requests working.
  exchange.setHeader("access-control-allow-origin", origin);
  exchange.setHeader("vary", "Origin");
  exchange.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
  if (exchange.method !== "OPTIONS" || exchange.header("access-control-request-method") === undefined) return false;
  exchange.respond(204, {
    "access-control-allow-methods": ALLOWED_METHODS,
    "access-control-allow-headers": ALLOWED_HEADERS,
    "access-control-max-age": "7200",
  });
  return true;
}
