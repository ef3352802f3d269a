import { describe, expect, it } from "vitest";
import { withoutUnexecutedNodes } from "../../bench/plan-text.js";

describe("withoutUnexecutedNodes", () => {
  it("leaves out nodes that never ran, their children and their labels, and keeps the rest", () => {
    const plan = [
      "Sort (actual time=1.0..1.1 rows=2 loops=1)",
      "  CTE tier_4_walk",
      "    ->  Limit (actual time=0.1..0.2 rows=2 loops=1)",
      "          Filter: (x)",
      "  CTE tier_3_walk",
      "    ->  Limit (never executed)",
      "          Filter: (y)",
      "          ->  Index Scan using s on t (never executed)",
      "  ->  Append (actual time=0.3..0.4 rows=2 loops=1)",
      "        ->  Result (never executed)",
      "              One-Time Filter: $1",
      "        InitPlan 7 (returns $6)",
      "          ->  CTE Scan on tier_3_walk (never executed)",
      "        ->  Result (actual time=0.3..0.4 rows=2 loops=1)",
    ].join("\n");
    expect(withoutUnexecutedNodes(plan).split("\n")).toEqual([
      "Sort (actual time=1.0..1.1 rows=2 loops=1)",
      "  CTE tier_4_walk",
      "    ->  Limit (actual time=0.1..0.2 rows=2 loops=1)",
      "          Filter: (x)",
      "  ->  Append (actual time=0.3..0.4 rows=2 loops=1)",
      "        ->  Result (actual time=0.3..0.4 rows=2 loops=1)",
    ]);
  });
});
