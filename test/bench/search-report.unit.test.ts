import { describe, expect, it } from "vitest";
import { renderSearchMarkdown, searchVerdict, type SearchFigures } from "../../bench/search-bench.js";

const targets = { p95TargetMs: 25, depth: 1_000 };

describe("the search bench's report", () => {
  it("passes a shape only when both pages' p95 are within the target", () => {
    expect(searchVerdict({ first: { p50Ms: 5, p95Ms: 25 }, deep: { p50Ms: 4, p95Ms: 9 } }, targets)).toBe("PASS");
    expect(searchVerdict({ first: { p50Ms: 5, p95Ms: 9 }, deep: { p50Ms: 20, p95Ms: 31.25 } }, targets)).toBe("MISS (6.3 ms over)");
    expect(searchVerdict({ first: { p50Ms: 5, p95Ms: 9 } }, targets)).toBe("PASS");
  });

  it("renders a row per shape, saying when no page is that deep", () => {
    const figures: SearchFigures = {
      load: { count: 100, names: 40, seconds: 1, tableMb: 2 },
      loadAverage: { start: [0.5, 0.4, 0.3], end: [0.6, 0.5, 0.4] },
      baseline: { p50Ms: 1, p95Ms: 2 },
      shapes: [
        {
          name: "one word",
          q: "web",
          first: { p50Ms: 3, p95Ms: 4 },
          deep: { p50Ms: 5, p95Ms: 6 },
          matches: 1500,
          plans: { first: "A", deep: "B" },
        },
        { name: "rare", q: "zzz", first: { p50Ms: 3, p95Ms: 40 }, matches: 7, plans: { first: "C" } },
      ],
    };
    const markdown = renderSearchMarkdown(figures, targets);
    expect(markdown).toContain("load average 0.50 0.40 0.30 at the start");
    expect(markdown).toContain("| one word | web | 1,500 | 3 | 4 | 5 | 6 | PASS |");
    expect(markdown).toContain("| rare | zzz | 7 | 3 | 40 | no page |  | MISS (15 ms over) |");
    expect(markdown).not.toContain("undefined");
  });
});
