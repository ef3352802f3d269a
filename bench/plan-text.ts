/**
 * EXPLAIN ANALYZE text without the parts that never ran: a search page's plan holds a branch for
 * every tier and mode, and only the few that ran say what the page cost.
 */

const NEVER_RAN = "(never executed)";
/** Lines that only label the node below them (a CTE, an init plan or a subplan). */
const LABEL = /^\s*(CTE |InitPlan |SubPlan )/;

const indentOf = (line: string) => line.length - line.trimStart().length;

/** Leaves out every node marked never executed, with everything under it and any label above it. */
export function withoutUnexecutedNodes(plan: string): string {
  const lines = plan.split("\n");
  const kept: string[] = [];
  let skipDeeperThan = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (skipDeeperThan >= 0 && indentOf(line) > skipDeeperThan) continue;
    skipDeeperThan = -1;
    if (line.includes(NEVER_RAN) || (LABEL.test(line) && lines[i + 1]?.includes(NEVER_RAN))) {
      skipDeeperThan = indentOf(line);
      continue;
    }
    kept.push(line);
  }
  return kept.join("\n");
}
