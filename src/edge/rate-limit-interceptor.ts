import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { RateLimitDecision, RateLimiter } from "../rate-limits/rate-limiter.js";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { clientAddressKey } from "./client-address.js";

export interface RateLimitInterceptorOptions {
  readonly limiter: RateLimiter;
  /** The methods whose calls draw from the caller's bucket. */
  readonly methods: readonly DescMethod[];
}

/**
 * Per-client-address limits on the chosen methods, on every protocol alike. Answers carry the
 * IETF RateLimit-Policy / RateLimit headers (draft-ietf-httpapi-ratelimit-headers), so clients can
 * pace themselves; a refusal is resource_exhausted (HTTP 429) with Retry-After and a
 * google.rpc.RetryInfo detail for gRPC clients.
 */
export function createRateLimitInterceptor(options: RateLimitInterceptorOptions): Interceptor {
  const limited = new Set(options.methods);
  return (next) => async (request) => {
    if (!limited.has(request.method)) return next(request);
    const decision = await options.limiter.take(request.contextValues.get(clientAddressKey));
    const headers = rateLimitHeaders(decision);
    if (!decision.allowed) {
      const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      headers.set("retry-after", String(seconds));
      const retryInfo = create(RetryInfoSchema, { retryDelay: create(DurationSchema, { seconds: BigInt(seconds) }) });
      throw new ConnectError(
        `rate limit exceeded: at most ${decision.limit} reads per second per client (bursts of ${decision.burst}); retry in ${seconds} s`,
        Code.ResourceExhausted,
        headers,
        [{ desc: RetryInfoSchema, value: retryInfo }],
      );
    }
    try {
      const response = await next(request);
      headers.forEach((value, key) => response.header.set(key, value));
      return response;
    } catch (error) {
      // Inner interceptors map every failure to a ConnectError; it carries the headers too.
      if (error instanceof ConnectError) headers.forEach((value, key) => error.metadata.set(key, value));
      throw error;
    }
  };
}

/**
 * The bucket as the draft's fields: the policy's quota is the bucket size and its window the time
 * an empty bucket takes to fill; `r` is what is left now and `t` when the bucket is full again.
 */
function rateLimitHeaders(decision: RateLimitDecision): Headers {
  const window = Math.max(1, Math.ceil(decision.burst / decision.limit));
  return new Headers({
    "ratelimit-policy": `"reads";q=${decision.burst};w=${window}`,
    ratelimit: `"reads";r=${decision.remaining};t=${Math.ceil(decision.resetMs / 1000)}`,
  });
}
