import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../src/errors.js";
import { MAX_SEARCH_TEXT, MAX_SEARCH_WORDS, planSearch } from "../../src/discovery/search-query.js";
import { searchPageSql } from "../../src/discovery/search-sql.js";

/** The pure half of search: how `q` becomes words, what a cursor is bound to, and what SQL is bound. */

function refusal(request: { q: string; entryType?: string }): { field: string; description: string }[] {
  try {
    planSearch({ entryType: "", ...request });
  } catch (error) {
    if (error instanceof InvalidArgumentError) return [...error.violations];
    throw error;
  }
  throw new Error("accepted");
}

describe("planSearch", () => {
  it("splits q into lower-case words of letters and digits", () => {
    expect(planSearch({ q: "PDF-Summariser v2", entryType: "" }).query.words).toEqual(["pdf", "summariser", "v2"]);
    expect(planSearch({ q: "'; drop table entries; --", entryType: "" }).query.words).toEqual(["drop", "table", "entries"]);
    expect(planSearch({ q: "pdf:* | !x & (", entryType: "" }).query.words).toEqual(["pdf", "x"]);
    expect(planSearch({ q: "Straße café", entryType: "" }).query.words).toEqual(["straße", "café"]);
  });

  it("binds cursors to the words and the type, not to how q was spelt", () => {
    const binding = (q: string, entryType = "") => planSearch({ q, entryType }).binding;
    expect(binding("PDF  summariser")).toBe(binding("pdf-summariser"));
    expect(binding("pdf summariser")).not.toBe(binding("summariser pdf"));
    expect(binding("pdf", "skill")).not.toBe(binding("pdf"));
  });

  it("refuses q that is empty, wordless, too long or has too many words, naming q", () => {
    for (const q of [
      "",
      "  \t",
      "--- !!!",
      "x".repeat(MAX_SEARCH_TEXT + 1),
      Array(MAX_SEARCH_WORDS + 1)
        .fill("w")
        .join(" "),
      "pdf\u0000",
    ]) {
      expect(refusal({ q }).map((violation) => violation.field)).toEqual(["q"]);
    }
    expect(refusal({ q: "pdf", entryType: "\ud800" }).map((violation) => violation.field)).toEqual(["entryType"]);
    expect(refusal({ q: "", entryType: "\ud800" }).map((violation) => violation.field)).toEqual(["q", "entryType"]);
  });
});

describe("searchPageSql", () => {
  it("binds every value from the request and splices none", () => {
    const query = planSearch({ q: "robert'); drop table entries", entryType: "x' or '1'='1" }).query;
    const statement = searchPageSql(query, { size: 21, after: ["2", "12345"] });
    expect(statement.sql).not.toMatch(/robert|drop|12345|'1'='1/);
    expect(statement.bindings).toContain("robert drop table entries");
    expect(statement.bindings).toContain("x' or '1'='1");
    expect(statement.bindings).toContain("12345");
    expect(statement.sql.split("?").length - 1).toBe(statement.bindings.length);
  });
});

describe("searchPageSql tiers", () => {
  const query = planSearch({ q: "quokka", entryType: "" }).query;

  it("reads every tier for a first page, walking each but the exact name", () => {
    const { sql } = searchPageSql(query, { size: 21 });
    expect(sql.match(/tier_\d_walk as/g)).toEqual(["tier_4_walk as", "tier_3_walk as", "tier_2_walk as", "tier_1_walk as"]);
  });

  it("starts after a cursor at the cursor's tier, leaving out the tiers above it", () => {
    const { sql, bindings } = searchPageSql(query, { size: 21, after: ["3", "77"] });
    expect(sql.match(/tier_\d_walk as/g)).toEqual(["tier_3_walk as", "tier_2_walk as", "tier_1_walk as"]);
    expect(sql).not.toMatch(/\b5::float8|\b4::float8/);
    expect(bindings).toContain("77");
  });
});
