import { describeError, type Logger } from "../logger.js";
import { createMemoryBucketStore, type BucketStore } from "./bucket-store.js";
import type { BucketLimits, RateLimitDecision } from "./gcra.js";

export type { RateLimitDecision } from "./gcra.js";

export interface RateLimiter {
  /** The policies this limiter enforces; a policy configured off is not among them. */
  readonly policies: ReadonlySet<string>;
  /**
   * Takes a token from `key`'s bucket under `policy`. Each policy's buckets are a namespace of
   * their own (stored as "policy:key"), so one client's reads never spend its writes. Never
   * rejects for trouble with the store.
   */
  take(policy: string, key: string): Promise<RateLimitDecision>;
  close(): Promise<void>;
}

export interface RateLimitPolicyLimits extends BucketLimits {
  /** How long this policy's takes wait for the store before deciding locally; else the limiter's. */
  readonly storeTimeoutMs?: number;
}

export interface RateLimiterOptions {
  /** Each policy's bucket size and refill rate, by policy name ("reads", "writes", ...). */
  readonly policies: Readonly<Record<string, RateLimitPolicyLimits>>;
  /** The store replicas share (or a memory store for a single process). */
  readonly store: BucketStore;
  readonly logger: Logger;
  /** A store slower than this is treated as down for that request. */
  readonly storeTimeoutMs?: number;
  readonly clock?: () => number;
}

/** Most refusals remembered locally; each is forgotten once its retry time has passed. */
const MAX_REMEMBERED_REFUSALS = 100_000;
const OUTAGE_LOG_INTERVAL_MS = 60_000;

/**
 * Per-key token buckets in a shared store, under named policies, with two local guards:
 * - A refused client is refused locally until its retry time, so a client far over its limit
 *   costs no store round trips: a flood of requests does not become a flood of writes.
 * - When the store fails or is slow, a local bucket of the same size decides instead (each
 *   process then limits on its own), and the outage is logged at most once a minute: calls do
 *   not fail because the limiter's store did.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { store, logger } = options;
  const policies = new Map(Object.entries(options.policies));
  const clock = options.clock ?? Date.now;
  const timeoutMs = options.storeTimeoutMs ?? 100;
  const fallback = createMemoryBucketStore({ clock });
  const refusals = new Map<string, { until: number; decision: RateLimitDecision }>();
  let lastOutageLog = -Infinity;

  function remembered(key: string, now: number): RateLimitDecision | undefined {
    const refusal = refusals.get(key);
    if (refusal === undefined) return undefined;
    if (refusal.until <= now) {
      refusals.delete(key);
      return undefined;
    }
    const waited = now - (refusal.until - refusal.decision.retryAfterMs);
    return {
      ...refusal.decision,
      retryAfterMs: refusal.until - now,
      resetMs: Math.max(0, refusal.decision.resetMs - waited),
    };
  }

  function remember(key: string, now: number, decision: RateLimitDecision): void {
    if (refusals.size >= MAX_REMEMBERED_REFUSALS) {
      for (const [other, refusal] of refusals) if (refusal.until <= now) refusals.delete(other);
      if (refusals.size >= MAX_REMEMBERED_REFUSALS) return;
    }
    refusals.set(key, { until: now + decision.retryAfterMs, decision });
  }

  function outage(error: unknown): void {
    const now = clock();
    if (now - lastOutageLog < OUTAGE_LOG_INTERVAL_MS) return;
    lastOutageLog = now;
    logger.error("rate-limit store unavailable; limiting per process until it answers", describeError(error));
  }

  return {
    policies: new Set(policies.keys()),
    async take(policy, clientKey) {
      const limits = policies.get(policy);
      if (limits === undefined) throw new Error(`no rate-limit policy named "${policy}"`);
      const key = `${policy}:${clientKey}`;
      const known = remembered(key, clock());
      if (known !== undefined) return known;
      let decision: RateLimitDecision;
      try {
        decision = await withTimeout(store.take(key, limits), limits.storeTimeoutMs ?? timeoutMs);
      } catch (error) {
        outage(error);
        return fallback.take(key, limits);
      }
      if (!decision.allowed) remember(key, clock(), decision);
      return decision;
    },
    async close() {
      await store.close();
      await fallback.close();
    },
  };
}

class StoreTimeoutError extends Error {}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
