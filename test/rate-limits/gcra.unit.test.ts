import { describe, expect, it } from "vitest";
import { takeToken, type BucketLimits } from "../../src/rate-limits/gcra.js";

/** Drives the pure rule with a hand-held clock: the token bucket's arithmetic, exactly. */
function bucket(limits: BucketLimits) {
  let tat: number | undefined;
  return (now: number) => {
    const step = takeToken(limits, now, tat);
    tat = step.tat;
    return step.decision;
  };
}

describe("the token bucket (GCRA)", () => {
  it("allows a full burst at once, then refuses, counting tokens down", () => {
    const take = bucket({ rate: 100, burst: 200 });
    const decisions = Array.from({ length: 201 }, () => take(0));
    expect(decisions.slice(0, 200).every((d) => d.allowed)).toBe(true);
    expect(decisions.slice(0, 3).map((d) => d.remaining)).toEqual([199, 198, 197]);
    expect(decisions[199]!.remaining).toBe(0);
    expect(decisions[200]).toEqual({ allowed: false, limit: 100, burst: 200, remaining: 0, retryAfterMs: 10, resetMs: 2000 });
  });

  it("refills one token per interval, and refusals do not spend tokens", () => {
    const take = bucket({ rate: 10, burst: 2 });
    expect([take(0).allowed, take(0).allowed, take(0).allowed]).toEqual([true, true, false]);
    expect(take(99).allowed).toBe(false);
    expect(take(99).retryAfterMs).toBe(1);
    expect(take(100).allowed).toBe(true);
    expect(take(100).allowed).toBe(false);
    // A long pause fills the bucket, but never beyond its size.
    expect([take(10_000).allowed, take(10_000).allowed, take(10_000).allowed]).toEqual([true, true, false]);
  });

  it("sustains exactly the rate over time", () => {
    const take = bucket({ rate: 50, burst: 5 });
    let allowed = 0;
    for (let now = 0; now < 10_000; now += 1) if (take(now).allowed) allowed++;
    // 5 at once, then one per 20 ms for 10 s.
    expect(allowed).toBe(5 + 500 - 1);
  });

  it("handles fractional rates: 0.5/s is one token every 2 s", () => {
    const take = bucket({ rate: 0.5, burst: 1 });
    expect(take(0).allowed).toBe(true);
    const refused = take(1);
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 1999, resetMs: 1999 });
    expect(take(1999).allowed).toBe(false);
    expect(take(2000).allowed).toBe(true);
  });

  it("reports when the bucket is full again", () => {
    const take = bucket({ rate: 4, burst: 8 });
    take(0);
    take(0);
    expect(take(0)).toMatchObject({ allowed: true, remaining: 5, resetMs: 750 });
    expect(take(750)).toMatchObject({ allowed: true, remaining: 7, resetMs: 250 });
  });
});
