/**
 * Checks one commit's message against .ci/commit-message.ts's rule; exits 1 with the problems.
 *
 *   node bin/run-ts.js .ci/check-commit-message.ts [rev]     (rev defaults to HEAD)
 *
 * Only the named commit: CI's clone may be shallow, and earlier commits predate the rule.
 */
import { execFileSync } from "node:child_process";
import { commitMessageProblems } from "./commit-message.js";

const rev = process.argv[2] ?? "HEAD";
const message = execFileSync("git", ["log", "-1", "--format=%B", rev], { encoding: "utf8" });
const problems = commitMessageProblems(message);
if (problems.length > 0) {
  const subject = message.split("\n")[0];
  process.stderr.write(`commit ${rev} (${subject}):\n${problems.map((problem) => `  - ${problem}\n`).join("")}`);
  process.exit(1);
}
console.log(`commit ${rev}: the message keeps the rule`);
