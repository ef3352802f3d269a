import { describe, expect, it } from "vitest";
import { abVerdict, type AbSide } from "../../bench/ab-report.js";
import { judgeRow } from "../../bench/floor-targets.js";
import type { ResolveRowFigures } from "../../bench/report.js";

/** The bench's targets: each row against the floor of its transport, and an A/B's 5% limit. */

const h2c = { transport: "h2c", target: "registry" } as const;
const h1 = { transport: "h1", target: "registry" } as const;
const floor = { perSecond: 20_000, p99Ms: 4 };

describe("rows against their floor", () => {
  it("holds an h2c row to 0.6 of the node:http2 floor's req/s and 1.25x its p99, both at once", () => {
    expect(judgeRow(h2c, { perSecond: 12_000, p99Ms: 5 }, floor)).toMatchObject({
      floorKey: "floor-http2",
      ofFloor: 0.6,
      p99OfFloor: 1.25,
      pass: true,
    });
    expect(judgeRow(h2c, { perSecond: 11_900, p99Ms: 4 }, floor)?.pass).toBe(false);
    expect(judgeRow(h2c, { perSecond: 19_000, p99Ms: 5.1 }, floor)?.pass).toBe(false);
  });

  it("holds an HTTP/1.1 row to 0.45 of the node:http floor's req/s, whatever its p99", () => {
    expect(judgeRow(h1, { perSecond: 9_000, p99Ms: 40 }, floor)).toMatchObject({ floorKey: "floor-http", pass: true });
    expect(judgeRow(h1, { perSecond: 8_990, p99Ms: 1 }, floor)?.pass).toBe(false);
  });

  it("judges neither a floor itself nor a row whose floor did not run", () => {
    expect(judgeRow({ transport: "h2c", target: "http2-floor" }, floor, floor)).toBeUndefined();
    expect(judgeRow(h2c, floor, undefined)).toBeUndefined();
  });
});

describe("an A/B run", () => {
  /** One side whose only row ran at these req/s, one run each. */
  const side = (label: string, ...perSecond: number[]): AbSide => ({
    label,
    creates: [],
    resolves: [
      {
        key: "grpc",
        label: "gRPC, h2c",
        transport: "h2c",
        target: "registry",
        runs: perSecond.map((rate) => ({
          result: { requestsPerSecond: rate, latencyP99Ms: 5, ok: rate, notOk: 0, shortBodies: 0 },
          usage: { serverCpuSeconds: 1, cpuPressurePercent: 0 },
        })),
      } as unknown as ResolveRowFigures,
    ],
  });

  it("passes a row at most 5% slower than the other commit's, by the medians of the runs", () => {
    expect(abVerdict({ current: side("this", 9_500, 1_000, 9_600), other: side("main", 10_000, 10_000, 20_000) }).pass).toBe(true);
  });

  it("fails a row more than 5% slower, naming it", () => {
    const verdict = abVerdict({ current: side("this", 9_490), other: side("main", 10_000) });
    expect(verdict.pass).toBe(false);
    expect(verdict.measured).toContain("gRPC, h2c");
  });
});
