import type { BucketLimits, RateLimitDecision } from "./gcra.js";
import { takeToken } from "./gcra.js";

/** Where buckets live: this process, or a store every replica shares. */
export interface BucketStore {
  /** Takes one token from `key`'s bucket, atomically, and says what happened. */
  take(key: string, limits: BucketLimits): Promise<RateLimitDecision>;
  close(): Promise<void>;
}

export interface MemoryBucketStoreOptions {
  /** Most buckets kept; a flood of distinct addresses must not grow memory without end. */
  readonly maxKeys?: number;
  readonly clock?: () => number;
}

/**
 * Buckets in this process. Map order is recency (a take re-inserts its key), so when the map is
 * full the least recently used bucket goes; a bucket whose TAT has passed is full anyway, so
 * forgetting it changes nothing.
 */
export function createMemoryBucketStore(options: MemoryBucketStoreOptions = {}): BucketStore {
  const maxKeys = options.maxKeys ?? 100_000;
  const clock = options.clock ?? Date.now;
  const tats = new Map<string, number>();

  return {
    async take(key, limits) {
      const now = clock();
      const step = takeToken(limits, now, tats.get(key));
      tats.delete(key);
      tats.set(key, step.tat);
      if (tats.size > maxKeys) evict(tats, now, maxKeys);
      return step.decision;
    },
    async close() {
      tats.clear();
    },
  };
}

function evict(tats: Map<string, number>, now: number, maxKeys: number): void {
  for (const [key, tat] of tats) {
    if (tats.size <= maxKeys) return;
    if (tat <= now) tats.delete(key);
  }
  // Every bucket is in use: drop the least recently used.
  for (const key of tats.keys()) {
    if (tats.size <= maxKeys) return;
    tats.delete(key);
  }
}
