import { takeToken, type BucketLimits } from "./gcra.js";

/**
 * Failed attempts per key (a client address), as a token bucket that only failures draw from: a
 * key with tokens left may try; one without is refused, right or wrong, until a token is back, so
 * guessing past the allowance teaches nothing. Successes cost nothing. In this process only.
 */
export interface AttemptLimit {
  /** 0 when `key` may try now; otherwise the milliseconds until it may. */
  waitMs(key: string): number;
  /** `key` failed an attempt: it spends a token. */
  failed(key: string): void;
}

export interface AttemptLimitOptions {
  /** Most keys remembered; a flood of distinct addresses must not grow memory without end. */
  readonly maxKeys?: number;
  readonly clock?: () => number;
}

export function createAttemptLimit(limits: BucketLimits, options: AttemptLimitOptions = {}): AttemptLimit {
  const maxKeys = options.maxKeys ?? 10_000;
  const clock = options.clock ?? Date.now;
  const tats = new Map<string, number>();
  return {
    waitMs(key) {
      const tat = tats.get(key);
      if (tat === undefined) return 0;
      const now = clock();
      if (tat <= now) {
        tats.delete(key);
        return 0;
      }
      // Whether one more failure would fit, without spending it.
      return takeToken(limits, now, tat).decision.retryAfterMs;
    },
    failed(key) {
      const step = takeToken(limits, clock(), tats.get(key));
      tats.delete(key);
      tats.set(key, step.tat);
      // Map order is recency: the key that failed least recently goes first.
      if (tats.size > maxKeys) tats.delete(tats.keys().next().value!);
    },
  };
}
