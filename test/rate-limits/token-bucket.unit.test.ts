import { describe, expect, it } from "vitest";
import { takeToken, type BucketLimits } from "../../src/rate-limits/gcra.js";

/**
 * The token bucket at the times it really runs at: epoch milliseconds near 2^41, where a double's
 * step is 2^-12 ms and sums of fractional intervals round. (gcra.unit.test.ts checks the arithmetic from
 * time 0, where nothing rounds.) Clocks are handed in, so every expectation is exact.
 */

/** November 2026 with a sub-millisecond part, as clock_timestamp() and Redis TIME report it. */
const EPOCH_NOW = 1_795_402_381_943.4929;

function bucket(limits: BucketLimits) {
  let tat: number | undefined;
  return (now: number) => {
    const step = takeToken(limits, now, tat);
    tat = step.tat;
    return step.decision;
  };
}

const RATES = [0.3, 0.7, 1, 3, 6, 7, 11, 13, 30, 59, 100, 333, 7777];

describe("the token bucket at epoch times", () => {
  it("keeps refilling a one-token bucket at every integer rate up to 1000", () => {
    const stuck: number[] = [];
    for (let rate = 1; rate <= 1000; rate++) {
      const take = bucket({ rate, burst: 1 });
      const first = take(EPOCH_NOW);
      const later = take(EPOCH_NOW + 5_000);
      if (!first.allowed || !later.allowed) stuck.push(rate);
    }
    expect(stuck).toEqual([]);
  });

  it.each(RATES)("hands out exactly the burst in one instant at %s/s, counting down", (rate) => {
    for (const burst of [1, 2, 7, 200, 5_000]) {
      const take = bucket({ rate, burst });
      const decisions = Array.from({ length: burst + 1 }, () => take(EPOCH_NOW));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(burst);
      expect(decisions.slice(0, burst).map((d) => d.remaining)).toEqual(Array.from({ length: burst }, (_, i) => burst - 1 - i));
      expect(decisions[burst]).toMatchObject({ allowed: false, remaining: 0 });
    }
  });

  it.each(RATES)("never refuses a client pacing itself at exactly %s/s", (rate) => {
    const take = bucket({ rate, burst: 1 });
    const refused = Array.from({ length: 2_000 }, (_, i) => take(EPOCH_NOW + (i * 1000) / rate)).filter((d) => !d.allowed);
    expect(refused).toHaveLength(0);
  });

  it.each(RATES)("at %s/s, retryAfterMs is the first whole millisecond that succeeds", (rate) => {
    const take = bucket({ rate, burst: 3 });
    for (let i = 0; i < 3; i++) take(EPOCH_NOW);
    // Refused in the same instant: at fast rates three tokens come back within a millisecond.
    const refused = take(EPOCH_NOW);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(take(EPOCH_NOW + refused.retryAfterMs - 1).allowed).toBe(false);
    expect(take(EPOCH_NOW + refused.retryAfterMs).allowed).toBe(true);
  });

  it("reports when the bucket is full again, and refills no more than the burst", () => {
    const take = bucket({ rate: 3, burst: 6 });
    take(EPOCH_NOW);
    const second = take(EPOCH_NOW);
    // Two tokens spent at 3/s: full again in 2/3 s, to the whole millisecond.
    expect(second).toMatchObject({ allowed: true, remaining: 4, resetMs: 667 });
    const afterPause = Array.from({ length: 7 }, () => take(EPOCH_NOW + 60_000));
    expect(afterPause.filter((d) => d.allowed)).toHaveLength(6);
  });
});
