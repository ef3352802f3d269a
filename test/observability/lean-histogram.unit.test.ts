import { describe, expect, it } from "vitest";
import { Histogram, Registry } from "prom-client";
import { createLeanHistogram } from "../../src/observability/lean-histogram.js";
import { seededRandom } from "../support/seeded-random.js";

/**
 * The call-duration histogram is ours for speed (src/observability/lean-histogram.ts), but what a
 * scrape reads must be what prom-client would have written: the same observations give the same text.
 */

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LABELS = ["method", "protocol", "code"] as const;
type Labels = Record<(typeof LABELS)[number], string>;

function both(help: string) {
  const registry = new Registry();
  const reference = new Histogram({ name: "calls_seconds", help, labelNames: LABELS, buckets: BUCKETS, registers: [registry] });
  const lean = createLeanHistogram({ name: "calls_seconds", help, labelNames: LABELS, buckets: BUCKETS });
  return {
    observe(labels: Labels, value: number) {
      reference.labels(labels).observe(value);
      lean.labels(labels).observe(value);
    },
    reference: async () => registry.metrics(),
    lean: () => lean.render(),
  };
}

describe("the lean histogram", () => {
  it("renders what prom-client renders for the same observations: bounds inclusive, +Inf, sum and count per series", async () => {
    const pair = both("Calls, and how long each took");
    const random = seededRandom(8);
    const series: Labels[] = [
      { method: "registry.v1.RegistryService/ResolveEntry", protocol: "grpc", code: "ok" },
      { method: "registry.v1.RegistryService/ResolveEntry", protocol: "rest", code: "not_found" },
      { method: "unmatched", protocol: "http", code: "unknown" },
    ];
    // Every bound exactly (le is "less than or equal"), past the last, and spread values.
    for (const bound of BUCKETS) pair.observe(series[0] as Labels, bound);
    pair.observe(series[0] as Labels, 11);
    for (let i = 0; i < 500; i++) pair.observe(series[i % 3] as Labels, random() ** 4 * 12);
    expect(pair.lean()).not.toBe("");
    expect(pair.lean().trimEnd()).toBe((await pair.reference()).trimEnd());
  });

  it("escapes label values and help text as prom-client does, and renders nothing before its first observation", async () => {
    const pair = both("Help with a \\ backslash\nand a second line");
    expect(pair.lean()).toBe("");
    pair.observe({ method: 'a "quoted" \\ path\nnext', protocol: "rest", code: "ok" }, 0.002);
    expect(pair.lean().trimEnd()).toBe((await pair.reference()).trimEnd());
  });

  it("refuses buckets out of order", () => {
    expect(() => createLeanHistogram({ name: "h", help: "h", labelNames: [], buckets: [1, 0.5] })).toThrow(/ascending/);
  });
});
