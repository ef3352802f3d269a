import { describe, expect, it } from "vitest";
import { formatFieldPath, jsonValueProblems, keyProblem, numberProblem, textProblem } from "../../src/domain/json-input.js";
import { validateEntry, type EntryInput } from "../../src/domain/entry-rules.js";
import { checkQuery, dataKeyProblem, literalProblem } from "../../src/discovery/query-language/columns.js";
import { parseQuery } from "../../src/discovery/query-language/parser.js";
import { QueryError } from "../../src/discovery/query-language/query-error.js";
import { structuredQuery } from "../../src/discovery/structured-conditions.js";
import { InvalidArgumentError } from "../../src/errors.js";
import { objectWithKeys } from "../abuse/abuse-transports.js";
import { BASE_POINT_SIGNATURE } from "../support/signature-vectors.js";

/**
 * The pure rules behind test/abuse/input-validation.test.ts, including the cases no protocol can
 * deliver today (protobuf-es refuses unpaired surrogates in string fields, and drops "__proto__"
 * keys) but which the rules refuse all the same, should a reader ever let them through.
 */

const EMOJI = "\u{1F600}";

describe("textProblem", () => {
  it("refuses NUL and unpaired surrogates of either half, in any place", () => {
    for (const text of ["\u0000", "a\u0000b", "\ud800", "a\udbff", "\udc00z", "\udfff", "\udc00\ud800", `${EMOJI}\ud800`]) {
      expect(textProblem(text), JSON.stringify(text)).toBeDefined();
    }
    expect(textProblem("a\u0000")).toContain("NUL");
    expect(textProblem("a\ud800")).toContain("surrogate");
  });

  it("accepts text, surrogate pairs and other control characters", () => {
    for (const text of ["", "plain", EMOJI, `a${EMOJI}b`, "tab\tnew\nline\u0001", "\uffff", "é"]) {
      expect(textProblem(text), JSON.stringify(text)).toBeUndefined();
    }
  });
});

describe("numbers and keys", () => {
  it("refuses non-finite numbers", () => {
    for (const value of [Infinity, -Infinity, NaN, Number("1e400")]) expect(numberProblem(value)).toContain("finite");
    for (const value of [0, -0, 1e308, -1.5, Number.MAX_SAFE_INTEGER]) expect(numberProblem(value)).toBeUndefined();
  });

  it("refuses __proto__ and keys that are not storable text", () => {
    expect(keyProblem("__proto__")).toContain("__proto__");
    expect(keyProblem("a\u0000")).toMatch(/^key /);
    for (const key of ["", "constructor", "prototype", "__proto", "a.b", EMOJI]) expect(keyProblem(key), key).toBeUndefined();
  });
});

describe("jsonValueProblems", () => {
  const limits = { depth: 16, problems: 8 };

  it("names each bad string, key and number by its path, in document order", () => {
    const value = { a: { b: "x\u0000" }, list: [1, NaN, "\ud800"], "k\u0000": 1, n: Infinity, ok: ["fine", { deep: true }] };
    expect(jsonValueProblems(value, limits).map((p) => formatFieldPath("data", p.path))).toEqual([
      "data.a.b",
      "data.list[1]",
      "data.list[2]",
      'data["k\\u0000"]',
      "data.n",
    ]);
  });

  it("finds an own __proto__ key and does not look inside it", () => {
    const value = { a: objectWithKeys([["__proto__", { hidden: "\u0000" }]]) };
    expect(jsonValueProblems(value, limits)).toEqual([{ path: ["a", "__proto__"], problem: keyProblem("__proto__") }]);
  });

  it("stops at the problem limit and does not look below the depth limit", () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, "\u0000"]));
    expect(jsonValueProblems(many, limits)).toHaveLength(8);
    let deep: unknown = "\u0000";
    for (let level = 0; level < 17; level++) deep = { a: deep };
    expect(jsonValueProblems(deep, limits)).toEqual([]);
    expect(jsonValueProblems(deep, { ...limits, depth: 17 })).toHaveLength(1);
  });

  it("finds nothing in storable JSON", () => {
    expect(jsonValueProblems({ a: [1, -2.5, true, null, "x", EMOJI, { b: {} }] }, limits)).toEqual([]);
  });
});

describe("formatFieldPath", () => {
  it("writes plain keys with dots, indices in brackets and other keys as escaped JSON strings", () => {
    expect(formatFieldPath("data", [])).toBe("data");
    expect(formatFieldPath("data", ["license", "list", 0, "a-b_c"])).toBe("data.license.list[0].a-b_c");
    expect(formatFieldPath("data", ["a b", "\ud800", "x\u0000", "1st"])).toBe('data["a b"]["\\ud800"]["x\\u0000"]["1st"]');
    expect(formatFieldPath("", ["entry", "data", "__proto__"])).toBe("entry.data.__proto__");
    // The name itself is always well-formed text.
    expect(textProblem(formatFieldPath("data", ["\udc00\u0000"]))).toBeUndefined();
  });
});

describe("entry rules", () => {
  const valid: EntryInput = {
    entryDid: "did:reg:main:skill:x@1.0.0",
    entryType: "skill",
    version: "1.0.0",
    publisherDid: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
    publishedAt: "2026-01-01T00:00:00Z",
    contentHash: `sha256:${"ab".repeat(32)}`,
    signature: BASE_POINT_SIGNATURE, // well-formed; these rules never verify it
  };
  const fieldsOf = (input: EntryInput): string[] => {
    try {
      validateEntry(input, { entryTypes: ["skill"], now: new Date("2026-01-02T00:00:00Z") });
      return [];
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidArgumentError);
      return (error as InvalidArgumentError).violations.map((v) => v.field);
    }
  };

  it("accepts the valid entry these cases start from", () => {
    expect(fieldsOf(valid)).toEqual([]);
  });

  it("refuses what no reader delivers today: an unpaired surrogate in description, an own __proto__ key in data", () => {
    expect(fieldsOf({ ...valid, description: "a\udfff" })).toEqual(["description"]);
    expect(fieldsOf({ ...valid, data: objectWithKeys([["__proto__", 1]]) })).toEqual(["data.__proto__"]);
  });

  it("refuses NaN, Infinity, NUL and surrogates in data before canonicalising it", () => {
    expect(fieldsOf({ ...valid, data: { a: NaN, b: [Infinity], c: { "d\ud800": 1 }, e: "\u0000" } })).toEqual([
      "data.a",
      "data.b[0]",
      'data.c["d\\ud800"]',
      "data.e",
    ]);
  });
});

describe("query language", () => {
  function queryFailure(text: string): string {
    try {
      checkQuery(parseQuery(text));
    } catch (error) {
      expect(error).toBeInstanceOf(QueryError);
      return (error as QueryError).message;
    }
    return expect.unreachable(`no error for ${text}`);
  }

  it("refuses an unpaired surrogate in a string literal where it stands, without quoting it", () => {
    const message = queryFailure("SELECT * FROM entries WHERE name = 'ab\ud800'");
    expect(message).toBe("query: line 1, column 39: expected Unicode text in the string, found unpaired surrogate U+D800");
    expect(textProblem(message)).toBeUndefined();
    // Even where a literal is out of place, so no "found string ..." can echo it.
    expect(queryFailure("SELECT 'x\udc00' FROM entries")).toContain("U+DC00");
  });

  it("refuses literals Postgres cannot store through the checker too", () => {
    expect(literalProblem("text", "a\ud800")).toContain("unpaired surrogates");
    expect(literalProblem("json", "a\u0000")).toContain("NUL");
    expect(literalProblem("json", Infinity)).toContain("finite");
  });

  it("refuses __proto__ in data paths, which would write into Object.prototype when results are built", () => {
    expect(dataKeyProblem("__proto__")).toBeDefined();
    expect(queryFailure("SELECT data.__proto__.polluted FROM entries")).toContain("__proto__");
    expect(queryFailure("SELECT * FROM entries WHERE data.a.__proto__ = 'x'")).toContain("__proto__");
    expect(dataKeyProblem("proto")).toBeUndefined();
  });
});

describe("structured conditions", () => {
  function conditionFields(request: Parameters<typeof structuredQuery>[0]): string[] {
    try {
      structuredQuery(request);
      return [];
    } catch (error) {
      return (error as InvalidArgumentError).violations.map((v) => v.field);
    }
  }

  it("names the condition whose value is not storable or not finite", () => {
    const conditions = [
      { field: "name", op: "=", value: "ok" },
      { field: "description", op: "=", value: "\ud800" },
      { field: "data.n", op: "=", value: NaN },
      { field: "data.n", op: "IN", value: [1, -Infinity] },
      { field: "tags", op: "CONTAINS", value: "\udfff" },
    ];
    expect(conditionFields({ entryType: "", conditions })).toEqual([
      "conditions[1].value",
      "conditions[2].value",
      "conditions[3].value",
      "conditions[4].value",
    ]);
  });

  it("refuses an entryType that is not storable text, and __proto__ in a data path", () => {
    expect(conditionFields({ entryType: "a\ud800", conditions: [] })).toEqual(["entryType"]);
    expect(conditionFields({ entryType: "", conditions: [{ field: "data.__proto__", op: "=", value: "x" }] })).toEqual([
      "conditions[0].field",
    ]);
  });

  it("does not quote a sent field or operator raw in its message", () => {
    try {
      structuredQuery({ entryType: "", conditions: [{ field: "x\ud800", op: "\udc00", value: 1 }] });
    } catch (error) {
      expect(textProblem((error as Error).message)).toBeUndefined();
      return;
    }
    expect.unreachable("the condition should be refused");
  });
});
