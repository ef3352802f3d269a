import { describe, expect, it } from "vitest";
import { checkQuery } from "../../src/discovery/query-language/columns.js";
import { parseQuery } from "../../src/discovery/query-language/parser.js";
import { QueryError } from "../../src/discovery/query-language/query-error.js";
import { CONDITION_FIELDS, structuredQuery, type StructuredCondition } from "../../src/discovery/structured-conditions.js";
import { InvalidArgumentError, type FieldViolation } from "../../src/errors.js";

/**
 * Structured discover and the query language share one checker: the same condition is accepted by
 * both or refused by both, for the same part (field/column, op/operator, value/literal), and the
 * structured path still names the condition that is wrong.
 */

type Part = "field" | "op" | "value";

function structuredRefusal(condition: StructuredCondition): FieldViolation[] {
  try {
    structuredQuery({ entryType: "", conditions: [condition] });
    return [];
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    return [...error.violations];
  }
}

/** The part of a predicate the query language refuses, read from its message, or undefined. */
function queryLanguageRefusal(text: string): Part | undefined {
  try {
    checkQuery(parseQuery(text));
    return undefined;
  } catch (error) {
    if (!(error instanceof QueryError)) throw error;
    if (error.detail.startsWith("expected a column") || error.detail.startsWith("expected data keys")) return "field";
    if (error.detail.startsWith("expected an operator")) return "op";
    return "value";
  }
}

function literalText(value: string | number | boolean): string {
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  return String(value);
}

function queryText(column: string, op: string, value: string | number | boolean): string {
  const predicate = op === "IN" ? `${column} IN (${literalText(value)})` : `${column} ${op} ${literalText(value)}`;
  return `SELECT * FROM entries WHERE ${predicate}`;
}

const OPERATORS = ["=", "!=", "<", "<=", ">", ">=", "IN", "CONTAINS"];
// Each value is sent as the JSON type its literal has, so neither side converts it.
const VALUES: readonly (string | number | boolean)[] = ["x", "1.2.3", "2026-01-01", "100 USDC", "active", "a\u0000", 5, 1.5, true];
const FIELDS: readonly [field: string, column: string][] = [
  ...Object.entries(CONDITION_FIELDS),
  ["data.license", "data.license"],
  ["data.a.b-c", "data.a.b-c"],
];

describe("one checker for both discovery endpoints", () => {
  it("accepts and refuses every field, operator and value alike, naming the same part", () => {
    const disagreements: string[] = [];
    let refusals = 0;
    for (const [field, column] of FIELDS) {
      for (const op of OPERATORS) {
        for (const value of VALUES) {
          const structured = structuredRefusal({ field, op, value: op === "IN" ? [value] : value });
          const structuredPart = structured.length === 0 ? undefined : structured[0]!.field.replace("conditions[0].", "");
          const text = queryText(column, op, value);
          const queryPart = queryLanguageRefusal(text);
          if (structuredPart !== queryPart)
            disagreements.push(`${text}: structured ${structuredPart ?? "accepts"}, query language ${queryPart ?? "accepts"}`);
          if (queryPart !== undefined) refusals += 1;
        }
      }
    }
    expect(disagreements).toEqual([]);
    // Both accepting everything would agree too; the table holds refusals of operators and values.
    expect(refusals).toBeGreaterThan(100);
  });

  it("states the checker's refusal in the condition's words", () => {
    const violation = (condition: StructuredCondition) => structuredRefusal(condition)[0];
    expect(violation({ field: "tags", op: ">", value: "x" })).toEqual({
      field: "conditions[0].op",
      description: "> does not apply to tags; use one of CONTAINS",
    });
    // The column takes IS NULL too, which a condition cannot spell, so it is not offered.
    expect(violation({ field: "revokedAt", op: "contains", value: "x" })).toEqual({
      field: "conditions[0].op",
      description: "CONTAINS does not apply to revokedAt; use one of = != < <= > >= IN",
    });
    expect(violation({ field: "version", op: "IN", value: ["1.0.0", "latest"] })).toEqual({
      field: "conditions[0].value",
      description: "must be a SemVer version string such as '1.2.3' for version",
    });
    expect(violation({ field: "data.a;drop", op: "=", value: "x" })).toEqual({
      field: "conditions[0].field",
      description: `unknown field "data.a;drop"; expected data keys of 1-64 letters, digits, '_' or '-'`,
    });
    expect(violation({ field: "data.__proto__.x", op: "=", value: "x" })).toEqual({
      field: "conditions[0].field",
      description: `unknown field "data.__proto__.x"; expected a data key other than __proto__`,
    });
  });

  it("names every bad condition at once, and a field and an operator that are both wrong", () => {
    let fields: string[] = [];
    try {
      structuredQuery({
        entryType: "",
        conditions: [
          { field: "name", op: "=", value: "ok" },
          { field: "tags", op: "=", value: "x" },
          { field: "sequence", op: ">", value: "soon" },
          { field: "data.", op: "~", value: "x" },
          { field: "nope", op: "=", value: "x" },
        ],
      });
    } catch (error) {
      fields = (error as InvalidArgumentError).violations.map((v) => v.field);
    }
    expect(fields).toEqual(["conditions[1].op", "conditions[2].value", "conditions[3].field", "conditions[3].op", "conditions[4].field"]);
  });
});
