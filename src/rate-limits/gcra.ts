/**
 * The token bucket, as the generic cell rate algorithm (GCRA): a bucket of `burst` tokens that
 * refills at `rate` tokens per second, kept as one number per client, the theoretical arrival time
 * (TAT): when the bucket would be full again if nothing more arrived. One number makes the shared
 * stores a single atomic statement (SQL) or script (Redis); this module is the rule they follow.
 * Pure: no I/O, times in milliseconds.
 */

export interface BucketLimits {
  /** Tokens added per second; requests per second sustained. */
  readonly rate: number;
  /** Tokens the bucket holds; requests allowed at once. */
  readonly burst: number;
}

export interface RateLimitDecision {
  readonly allowed: boolean;
  /** The rate, in requests per second. */
  readonly limit: number;
  readonly burst: number;
  /** Whole tokens left after this request. */
  readonly remaining: number;
  /** 0 when allowed; otherwise how long until one token is there. */
  readonly retryAfterMs: number;
  /** How long until the bucket is full again. */
  readonly resetMs: number;
}

export interface GcraStep {
  readonly decision: RateLimitDecision;
  /** The TAT to store: advanced by one token when allowed, unchanged when refused. */
  readonly tat: number;
}

/**
 * Times are counted in whole grains of 1/1024 ms (about a microsecond, the resolution of the
 * stores' clocks). Epoch milliseconds lie between 2^40 and 2^41, where a double's step is 2^-12 ms,
 * so sums of arbitrary fractions round: a TAT of now + 1000/6 lands a hair past now + capacity, and
 * a bucket of one token would then never be allowed again. Sums of multiples of a power-of-two
 * grain stay exact (until the year 2248), so every comparison below is exact.
 */
export const TIME_GRAIN_MS = 1 / 1024;

/** Down to a whole grain: a TAT on the grain, or `now` rounded in the client's favour. */
export const toGrain = (ms: number): number => Math.floor(ms / TIME_GRAIN_MS) * TIME_GRAIN_MS;

/**
 * Milliseconds one token takes to arrive, in whole grains (at least one). Rounded down, so the rate
 * enforced is never below the rate configured: a client pacing itself at exactly `rate` is never
 * refused.
 */
export const tokenInterval = (limits: BucketLimits): number => Math.max(1, Math.floor(1000 / limits.rate / TIME_GRAIN_MS)) * TIME_GRAIN_MS;

/** What taking one token at `now` decides, given the stored TAT (undefined: a full bucket). */
export function takeToken(limits: BucketLimits, now: number, storedTat: number | undefined): GcraStep {
  const interval = tokenInterval(limits);
  const capacity = limits.burst * interval;
  // A TAT in the past means a full bucket: tokens beyond `burst` are not saved up.
  const start = toGrain(Math.max(storedTat ?? now, now));
  const next = start + interval;
  if (next - now <= capacity) {
    return { decision: decisionAt(limits, now, next, true), tat: next };
  }
  return { decision: decisionAt(limits, now, start, false), tat: start };
}

/**
 * The decision a store reports once it knows the outcome and the TAT after it. Stores that decide
 * in SQL or Lua call this with their verdict, so the numbers clients see come from one place.
 */
export function decisionAt(limits: BucketLimits, now: number, tat: number, allowed: boolean): RateLimitDecision {
  const interval = tokenInterval(limits);
  const capacity = limits.burst * interval;
  const used = Math.max(0, tat - now);
  return {
    allowed,
    limit: limits.rate,
    burst: limits.burst,
    // A refusal means no whole token is there, whatever a store's (possibly older) TAT suggests.
    remaining: allowed ? Math.max(0, Math.floor((capacity - used) / interval + 1e-9)) : 0,
    // Refused: one more token fits once the TAT has come within the capacity again.
    retryAfterMs: allowed ? 0 : Math.max(0, Math.ceil(used + interval - capacity)),
    resetMs: Math.ceil(used),
  };
}
