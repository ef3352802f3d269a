import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { QUERYABLE_FIELDS } from "../../src/domain/entry-fields.js";

/** docs/query-language.md's table of columns names exactly the catalogue's queryable columns, so a new field cannot go undocumented. */
describe("the query language's columns table", () => {
  const docs = readFileSync(new URL("../../docs/query-language.md", import.meta.url), "utf8");
  const table = /## Columns\n\n([\s\S]*?)\n\n/.exec(docs)?.[1] ?? "";
  const documented = new Set(
    table
      .split("\n")
      .slice(2)
      .flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`([a-z_]+)`/g)].map((match) => match[1])),
  );

  it("lists every queryable column, and no other", () => {
    expect([...documented].sort()).toEqual(QUERYABLE_FIELDS.map((field) => field.column).sort());
  });
});
