import { describe, expect, it } from "vitest";
import { commitMessageProblems } from "../../.ci/commit-message.js";

const BODY = "\n\nWhy: the reason, in a sentence or two.\n";

describe("a commit message", () => {
  it.each([
    "Add Biome as the formatter and linter",
    "Fix the deadline clamp for timeouts over 24.8 days",
    "Mirror store: a violation it cannot explain is named, not an outage",
    "app.ts: one address resolver for the adapter and the unary path",
    "Feed streams wake a chunk a turn",
    "Signed notes: refuse control characters",
    "Shared limits use Redis when REDIS_URL is set",
    "Speed up the resolve path",
    "Embed the walkthrough's output in the README",
  ])("passes with a body: %s", (subject) => {
    expect(commitMessageProblems(subject + BODY)).toEqual([]);
  });

  it("keeps its subject under 72 characters", () => {
    expect(commitMessageProblems("a".repeat(71) + BODY)).toEqual([]);
    expect(commitMessageProblems("a".repeat(72) + BODY)).toEqual(["the subject has 72 characters; keep it under 72"]);
  });

  it("ends its subject without a period", () => {
    expect(commitMessageProblems(`Add the lint step to CI.${BODY}`)).toEqual(["the subject ends with a period"]);
    expect(commitMessageProblems(`Add the lint step to CI...${BODY}`)).toEqual(["the subject ends with a period"]);
  });

  it.each([
    ["Added the lint step to CI", "Added"],
    ["Fixed: the deadline clamp", "Fixed"],
    ["edge: Removed the second pipeline", "Removed"],
    ["Rate limits: updated the bucket key", "updated"],
    ["Wrote the architecture table", "Wrote"],
  ])("says what the commit does, not what was done: %s", (subject, word) => {
    expect(commitMessageProblems(subject + BODY)).toEqual([
      `the subject says "${word}", past tense; say what the commit does ("Add", "Fix", ...)`,
    ]);
  });

  it("has a body after a blank line", () => {
    const noBody = "there is no body: a blank line after the subject, then why the change is made";
    expect(commitMessageProblems("Add the lint step")).toEqual([noBody]);
    expect(commitMessageProblems("Add the lint step\n")).toEqual([noBody]);
    expect(commitMessageProblems("Add the lint step\n\n\n")).toEqual([noBody]);
    expect(commitMessageProblems("Add the lint step\nso CI checks style\n")).toEqual(["the line after the subject is not blank"]);
    expect(commitMessageProblems("Add the lint step\r\n\r\nSo CI checks style.\r\n")).toEqual([]);
  });

  it("reports every problem at once", () => {
    expect(commitMessageProblems(`Fixed ${"the thing ".repeat(8)}.`)).toEqual([
      "the subject has 87 characters; keep it under 72",
      "the subject ends with a period",
      'the subject says "Fixed", past tense; say what the commit does ("Add", "Fix", ...)',
      "there is no body: a blank line after the subject, then why the change is made",
    ]);
    expect(commitMessageProblems("")).toEqual(["the subject is empty"]);
  });
});
