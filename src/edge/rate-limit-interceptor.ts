import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import type { Principal } from "../auth/principal.js";
import type { RateLimitDecision, RateLimiter } from "../rate-limits/rate-limiter.js";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { addressKey, clientAddressKey, type ClientAddressResolver } from "./client-address.js";
import { negotiateEncoding } from "../transport/compression.js";
import type { HttpExchange } from "../transport/http-exchange.js";
import { writeRestError } from "./rest-transcoder.js";

/**
 * The limits the edge applies, each a policy of the limiter with buckets of its own: its name is
 * also the policy's name in the RateLimit headers.
 * - reads: resolves, version lists, discovery, the change feed and the transparency log (its RPCs,
 *   checkpoint and tiles), per client address;
 * - writes: creates and revokes, per publisher (the token's subject), or per client address for
 *   a caller whose token did not verify;
 * - tokens: token issuance, per client address.
 */
export type RateLimitPolicy = "reads" | "writes" | "tokens";

/** What a refusal says each policy counts. */
const COUNTED: Record<RateLimitPolicy, string> = { reads: "reads", writes: "writes", tokens: "token requests" };

export interface AddressLimit {
  readonly policy: RateLimitPolicy;
  /** The methods whose calls draw from the caller's bucket under this policy. */
  readonly methods: readonly DescMethod[];
}

export interface RateLimitInterceptorOptions {
  readonly limiter: RateLimiter;
  readonly limits: readonly AddressLimit[];
}

/**
 * Per-client-address limits on the chosen methods, on every protocol alike (the limits that need
 * no authentication: reads and token issuance). Answers carry the RateLimit headers, so clients
 * can pace themselves.
 */
export function createRateLimitInterceptor(options: RateLimitInterceptorOptions): Interceptor {
  const { limiter } = options;
  const policies = new Map(options.limits.flatMap(({ policy, methods }) => methods.map((method) => [method, policy] as const)));
  return (next) => async (request) => {
    const policy = policies.get(request.method);
    if (policy === undefined) return next(request);
    const headers = await admitAddress(limiter, policy, request.contextValues.get(clientAddressKey));
    try {
      const response = await next(request);
      for (const [key, value] of headers) response.header.set(key, value);
      return response;
    } catch (error) {
      // Inner interceptors map every failure to a ConnectError; it carries the headers too.
      if (error instanceof ConnectError) for (const [key, value] of headers) error.metadata.set(key, value);
      throw error;
    }
  };
}

/**
 * Draws one write from its bucket. Called by the write handlers once authentication is settled,
 * which an interceptor (running before the handler) cannot know: a verified caller draws from its
 * subject's bucket, so only the holder of a valid token can spend a publisher's writes; a caller
 * whose token did not verify (`undefined`) draws from its address's bucket, so a flood of bad
 * tokens is limited too. Refuses as the interceptor does; allowed, it sets the same headers.
 */
export type WriteLimit = (context: HandlerContext, principal: Principal | undefined) => Promise<void>;

export function createWriteLimit(limiter: RateLimiter): WriteLimit {
  return async (context, principal) => {
    // Subjects are DIDs ("did:..."), addresses are IPs: the two kinds of key cannot meet.
    const headers =
      principal === undefined
        ? await admitAddress(limiter, "writes", context.values.get(clientAddressKey))
        : await admit(limiter, "writes", principal.subject, "publisher");
    for (const [key, value] of headers) context.responseHeader.set(key, value);
  };
}

/**
 * A per-address limit for a request that is no RPC call (GET /checkpoint, /tile/..., the SSE
 * stream), drawing from the same buckets as the interceptor. Allowed, it sets the RateLimit headers
 * on the exchange (they go with whatever answer follows) and resolves true; refused, it has
 * answered 429 as a refused REST call is answered (Retry-After, RateLimit headers, RetryInfo) and
 * resolves false: the caller then stops.
 */
export type ExchangeLimit = (exchange: HttpExchange) => Promise<boolean>;

export function createExchangeLimit(
  limiter: RateLimiter,
  policy: RateLimitPolicy,
  resolveClientAddress: ClientAddressResolver,
): ExchangeLimit {
  return async (exchange) => {
    let headers: Headers;
    try {
      headers = await admitAddress(limiter, policy, resolveClientAddress(exchange));
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error;
      await writeRestError(exchange, error, undefined, {}, negotiateEncoding(exchange.header("accept-encoding")));
      return false;
    }
    for (const [key, value] of headers) exchange.setHeader(key, value);
    return true;
  };
}

/**
 * Takes a token from `key`'s bucket under `policy` and returns the RateLimit headers for the
 * answer; past the limit, throws resource_exhausted (HTTP 429) carrying those headers,
 * Retry-After, and a google.rpc.RetryInfo detail for gRPC clients.
 */
/** admit for a client address, counted under its key (an IPv6 /64 as one client). */
function admitAddress(limiter: RateLimiter, policy: RateLimitPolicy, address: string): Promise<Headers> {
  return admit(limiter, policy, addressKey(address), "client address");
}

async function admit(limiter: RateLimiter, policy: RateLimitPolicy, key: string, per: string): Promise<Headers> {
  const decision = await limiter.take(policy, key);
  const headers = rateLimitHeaders(policy, decision);
  if (decision.allowed) return headers;
  const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  headers.set("retry-after", String(seconds));
  const retryInfo = create(RetryInfoSchema, { retryDelay: create(DurationSchema, { seconds: BigInt(seconds) }) });
  throw new ConnectError(
    `rate limit exceeded: at most ${decision.limit} ${COUNTED[policy]} per second per ${per} (bursts of ${decision.burst}); retry in ${seconds} s`,
    Code.ResourceExhausted,
    headers,
    [{ desc: RetryInfoSchema, value: retryInfo }],
  );
}

/**
 * The bucket as the IETF draft's fields (draft-ietf-httpapi-ratelimit-headers): the policy's
 * quota is the bucket size and its window the time an empty bucket takes to fill; `r` is what is
 * left now and `t` when the bucket is full again.
 */
function rateLimitHeaders(policy: RateLimitPolicy, decision: RateLimitDecision): Headers {
  // Less a hair, so that a fractional rate's rounding (3 / 0.1 is 30.000000000000004) is not a second more.
  const window = Math.max(1, Math.ceil(decision.burst / decision.limit - 1e-9));
  return new Headers({
    "ratelimit-policy": `"${policy}";q=${decision.burst};w=${window}`,
    ratelimit: `"${policy}";r=${decision.remaining};t=${Math.ceil(decision.resetMs / 1000)}`,
  });
}
