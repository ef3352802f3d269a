import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../src/errors.js";
import { checkQuery, COLUMN_NAMES, isDateOrTime } from "../../src/discovery/query-language/columns.js";
import { tokenize } from "../../src/discovery/query-language/lexer.js";
import { MAX_LIMIT, MAX_NESTING, MAX_PREDICATES, MAX_QUERY_BYTES, parseQuery } from "../../src/discovery/query-language/parser.js";
import { QueryError } from "../../src/discovery/query-language/query-error.js";
import { withoutPositions } from "../../src/discovery/discovery-plan.js";

/** The tree without source positions, so expected trees stay readable. */
const shape = withoutPositions;

/** Literals are nodes with a position; in expected trees they are written as bare values. */
function parsed(text: string): unknown {
  return unwrapLiterals(shape(parseQuery(text)));
}

function unwrapLiterals(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrapLiterals);
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "value") return (value as { value: unknown }).value;
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, unwrapLiterals(inner)]));
  }
  return value;
}

const col = (name: string) => ({ kind: "column", name });
const data = (...path: string[]) => ({ kind: "data", path });
const cmp = (column: unknown, op: string, value: unknown) => ({ kind: "comparison", column, op, value });
const where = (expr: unknown, rest: object = {}) => ({ columns: "*", where: expr, orderBy: [], ...rest });

/** The error a query raises, as `line:column` and the text after the position. */
function failure(text: string, check = false): { at: string; detail: string } {
  try {
    const query = parseQuery(text);
    if (check) checkQuery(query);
  } catch (error) {
    expect(error).toBeInstanceOf(QueryError);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    const queryError = error as QueryError;
    expect(queryError.violations[0]?.field).toBe("query");
    const at = queryError.position === undefined ? "-" : `${queryError.position.line}:${queryError.position.column}`;
    return { at, detail: queryError.detail };
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe("tokenize", () => {
  it("gives 1-based line and column for each token", () => {
    const tokens = tokenize("SELECT *\n  FROM entries");
    expect(tokens.map((t) => [t.kind, t.text, t.position.line, t.position.column])).toEqual([
      ["keyword", "SELECT", 1, 1],
      ["punctuation", "*", 1, 8],
      ["keyword", "FROM", 2, 3],
      ["identifier", "entries", 2, 8],
      ["end", "", 2, 15],
    ]);
  });

  it("reads every operator, longest first", () => {
    const tokens = tokenize("= != <> < <= > >=");
    expect(tokens.filter((t) => t.kind === "operator").map((t) => t.text)).toEqual(["=", "!=", "<>", "<", "<=", ">", ">="]);
  });

  it("reads strings with '' escapes, integers and decimals", () => {
    const tokens = tokenize("'it''s' 42 3.25 -7 ''");
    expect(tokens.slice(0, 5).map((t) => ("value" in t ? t.value : t.text))).toEqual(["it's", 42, 3.25, -7, ""]);
  });
});

describe("parseQuery accepts", () => {
  const cases: Array<[string, string, unknown]> = [
    ["select star", "SELECT * FROM entries", { columns: "*", orderBy: [] }],
    ["column list", "SELECT name, version FROM entries", { columns: [col("name"), col("version")], orderBy: [] }],
    ["lowercase keywords", "select * from entries where name = 'a'", where(cmp(col("name"), "=", "a"))],
    ["mixed-case keywords", "SeLeCt * FrOm entries WhErE is_latest = TrUe", where(cmp(col("is_latest"), "=", true))],
    ["FALSE", "SELECT * FROM entries WHERE is_latest = false", where(cmp(col("is_latest"), "=", false))],
    ["'' escape", "SELECT * FROM entries WHERE description = 'it''s ''quoted'''", where(cmp(col("description"), "=", "it's 'quoted'"))],
    ["empty string", "SELECT * FROM entries WHERE description = ''", where(cmp(col("description"), "=", ""))],
    ["<> becomes !=", "SELECT * FROM entries WHERE name <> 'a'", where(cmp(col("name"), "!=", "a"))],
    ["!=", "SELECT * FROM entries WHERE name != 'a'", where(cmp(col("name"), "!=", "a"))],
    [
      "< <= > >=",
      "SELECT * FROM entries WHERE sequence < 1 AND sequence <= 2 AND sequence > 3 AND sequence >= 4",
      where({
        kind: "and",
        operands: [
          cmp(col("sequence"), "<", 1),
          cmp(col("sequence"), "<=", 2),
          cmp(col("sequence"), ">", 3),
          cmp(col("sequence"), ">=", 4),
        ],
      }),
    ],
    ["decimal number", "SELECT * FROM entries WHERE data.score > 0.75", where(cmp(data("score"), ">", 0.75))],
    [
      "AND binds tighter than OR",
      "SELECT * FROM entries WHERE name = 'a' OR name = 'b' AND is_latest = TRUE",
      where({
        kind: "or",
        operands: [cmp(col("name"), "=", "a"), { kind: "and", operands: [cmp(col("name"), "=", "b"), cmp(col("is_latest"), "=", true)] }],
      }),
    ],
    [
      "NOT binds tighter than AND",
      "SELECT * FROM entries WHERE NOT name = 'a' AND name = 'b'",
      where({
        kind: "and",
        operands: [{ kind: "not", operand: cmp(col("name"), "=", "a") }, cmp(col("name"), "=", "b")],
      }),
    ],
    [
      "parentheses override precedence",
      "SELECT * FROM entries WHERE (name = 'a' OR name = 'b') AND is_latest = TRUE",
      where({
        kind: "and",
        operands: [{ kind: "or", operands: [cmp(col("name"), "=", "a"), cmp(col("name"), "=", "b")] }, cmp(col("is_latest"), "=", true)],
      }),
    ],
    ["nested parentheses", "SELECT * FROM entries WHERE ((name = 'a'))", where(cmp(col("name"), "=", "a"))],
    [
      "NOT over parentheses",
      "SELECT * FROM entries WHERE NOT (name = 'a' OR NOT name = 'b')",
      where({
        kind: "not",
        operand: { kind: "or", operands: [cmp(col("name"), "=", "a"), { kind: "not", operand: cmp(col("name"), "=", "b") }] },
      }),
    ],
    [
      "IN",
      "SELECT * FROM entries WHERE status IN ('active', 'revoked')",
      where({ kind: "in", column: col("status"), values: ["active", "revoked"], negated: false }),
    ],
    [
      "NOT IN",
      "SELECT * FROM entries WHERE sequence NOT IN (1, 2, 3)",
      where({ kind: "in", column: col("sequence"), values: [1, 2, 3], negated: true }),
    ],
    [
      "LIKE",
      "SELECT * FROM entries WHERE name LIKE 'web-%'",
      where({ kind: "like", column: col("name"), pattern: "web-%", negated: false }),
    ],
    [
      "NOT LIKE",
      "SELECT * FROM entries WHERE name not like '%_test'",
      where({ kind: "like", column: col("name"), pattern: "%_test", negated: true }),
    ],
    ["IS NULL", "SELECT * FROM entries WHERE bond_amount IS NULL", where({ kind: "is_null", column: col("bond_amount"), negated: false })],
    [
      "IS NOT NULL",
      "SELECT * FROM entries WHERE description is not null",
      where({ kind: "is_null", column: col("description"), negated: true }),
    ],
    ["CONTAINS", "SELECT * FROM entries WHERE tags CONTAINS 'search'", where({ kind: "contains", column: col("tags"), value: "search" })],
    [
      "data path",
      "SELECT data.model FROM entries WHERE data.runtime.os = 'linux'",
      {
        columns: [data("model")],
        where: cmp(data("runtime", "os"), "=", "linux"),
        orderBy: [],
      },
    ],
    ["data keys with - and _", "SELECT * FROM entries WHERE data.max-tokens_v2.x1 = 3", where(cmp(data("max-tokens_v2", "x1"), "=", 3))],
    [
      "ORDER BY several columns",
      "SELECT * FROM entries ORDER BY name, version DESC, published_at ASC, data.rank desc",
      {
        columns: "*",
        orderBy: [
          { column: col("name"), direction: "asc" },
          { column: col("version"), direction: "desc" },
          { column: col("published_at"), direction: "asc" },
          { column: data("rank"), direction: "desc" },
        ],
      },
    ],
    ["LIMIT", "SELECT * FROM entries LIMIT 5", { columns: "*", orderBy: [], limit: 5 }],
    ["LIMIT 0", "SELECT * FROM entries LIMIT 0", { columns: "*", orderBy: [], limit: 0 }],
    ["semicolon", "SELECT * FROM entries;", { columns: "*", orderBy: [] }],
    [
      "every clause",
      "SELECT name FROM entries WHERE is_latest = TRUE ORDER BY sequence DESC LIMIT 10 ;",
      {
        columns: [col("name")],
        where: cmp(col("is_latest"), "=", true),
        orderBy: [{ column: col("sequence"), direction: "desc" }],
        limit: 10,
      },
    ],
    [
      "multi-line with tabs and CRLF",
      "SELECT name,\r\n\tversion\nFROM entries\nWHERE\n  entry_type = 'skill'\nLIMIT 3\n",
      {
        columns: [col("name"), col("version")],
        where: cmp(col("entry_type"), "=", "skill"),
        orderBy: [],
        limit: 3,
      },
    ],
    [
      "string with keywords and SQL inside",
      "SELECT * FROM entries WHERE description = '; DROP TABLE entries; --'",
      where(cmp(col("description"), "=", "; DROP TABLE entries; --")),
    ],
    ["multi-line string", "SELECT * FROM entries WHERE description = 'a\nb'", where(cmp(col("description"), "=", "a\nb"))],
  ];

  it.each(cases)("%s", (_name, text, expected) => {
    expect(parsed(text)).toEqual(expected);
  });

  it("records positions of nodes and literals", () => {
    const query = parseQuery("SELECT *\nFROM entries\nWHERE NOT (name = 'a'\n  OR version IN ('1.0.0'))");
    expect(query.where).toMatchObject({
      kind: "not",
      position: { line: 3, column: 7 },
      operand: {
        kind: "or",
        position: { line: 3, column: 12 },
        operands: [
          { column: { position: { line: 3, column: 12 } }, value: { value: "a", position: { line: 3, column: 19 } } },
          { position: { line: 4, column: 6 }, values: [{ position: { line: 4, column: 18 } }] },
        ],
      },
    });
  });
});

describe("parseQuery rejects", () => {
  const cases: Array<[string, string, string]> = [
    ["", "1:1", "expected SELECT, found end of query"],
    ["SELECT", "1:7", "expected '*' or a column, found end of query"],
    ["SELECT * FROM", "1:14", "expected entries, found end of query"],
    ["SELECT * FROM users", "1:15", "expected entries, found identifier 'users'"],
    ["SELECT * FROM ENTRIES", "1:15", "expected entries, found identifier 'ENTRIES'"],
    ["SELECT name, FROM entries", "1:14", "expected a column, found keyword FROM"],
    ["SELECT * entries", "1:10", "expected FROM, found identifier 'entries'"],
    ["SELECT * FROM entries WHERE", "1:28", "expected a column, NOT or '(', found end of query"],
    ["SELECT * FROM entries WHERE name", "1:33", "expected an operator (= != <> < <= > >= IN LIKE IS CONTAINS), found end of query"],
    ["SELECT * FROM entries WHERE name =", "1:35", "expected a literal (string, number, TRUE or FALSE), found end of query"],
    [
      "SELECT * FROM entries WHERE name = version",
      "1:36",
      "expected a literal (string, number, TRUE or FALSE), found identifier 'version'",
    ],
    ["SELECT * FROM entries WHERE name = NULL", "1:36", "expected a literal (string, number, TRUE or FALSE), found keyword NULL"],
    ["SELECT * FROM entries WHERE name == 'a'", "1:35", "expected a literal (string, number, TRUE or FALSE), found '='"],
    ["SELECT * FROM entries WHERE (name = 'a'", "1:40", "expected ')', found end of query"],
    ["SELECT * FROM entries WHERE name = 'a')", "1:39", "expected AND, OR, ORDER BY, LIMIT, ';' or end of query, found ')'"],
    ["SELECT * FROM entries WHERE name IN ()", "1:38", "expected a literal (string, number, TRUE or FALSE), found ')'"],
    ["SELECT * FROM entries WHERE name IN ('a' 'b')", "1:42", "expected ',' or ')', found string 'b'"],
    ["SELECT * FROM entries WHERE name IN 'a'", "1:37", "expected '(', found string 'a'"],
    ["SELECT * FROM entries WHERE name NOT = 'a'", "1:38", "expected IN or LIKE, found '='"],
    ["SELECT * FROM entries WHERE name LIKE 5", "1:39", "expected a string pattern after LIKE, found number 5"],
    ["SELECT * FROM entries WHERE name IS 'x'", "1:37", "expected NOT or NULL, found string 'x'"],
    ["SELECT * FROM entries WHERE name IS NOT 'x'", "1:41", "expected NULL, found string 'x'"],
    ["SELECT * FROM entries WHERE name = 'a' AND", "1:43", "expected a column, NOT or '(', found end of query"],
    ["SELECT * FROM entries ORDER name", "1:29", "expected BY, found identifier 'name'"],
    ["SELECT * FROM entries ORDER BY", "1:31", "expected a column, found end of query"],
    ["SELECT * FROM entries ORDER BY name UP", "1:37", "expected ',', LIMIT, ';' or end of query, found identifier 'UP'"],
    ["SELECT * FROM entries LIMIT", "1:28", "expected a non-negative integer after LIMIT (at most 10000), found end of query"],
    ["SELECT * FROM entries LIMIT -1", "1:29", "expected a non-negative integer after LIMIT (at most 10000), found number -1"],
    ["SELECT * FROM entries LIMIT 1.5", "1:29", "expected a non-negative integer after LIMIT (at most 10000), found number 1.5"],
    ["SELECT * FROM entries LIMIT 'x'", "1:29", "expected a non-negative integer after LIMIT (at most 10000), found string 'x'"],
    ["SELECT * FROM entries LIMIT 5 LIMIT 6", "1:31", "expected ';' or end of query, found keyword LIMIT"],
    ["SELECT * FROM entries LIMIT 5 WHERE name = 'a'", "1:31", "expected ';' or end of query, found keyword WHERE"],
    ["SELECT * FROM entries;;", "1:23", "expected end of query, found ';'"],
    ["SELECT * FROM entries WHERE name = 'abc", "1:36", "expected closing quote for the string starting here, found end of query"],
    ["SELECT *\nFROM entries\nWHERE name = 'it''s\n", "3:14", "expected closing quote for the string starting here, found end of query"],
    ["SELECT *\nFROM entries\n  WHERE name # 'a'", "3:14", "expected a keyword, column, literal, operator or punctuation, found '#'"],
    ['SELECT * FROM entries WHERE name = "a"', "1:36", "expected a keyword, column, literal, operator or punctuation, found '\"'"],
    ["SELECT * FROM entries WHERE sequence = 12abc", "1:42", "expected a digit, space or operator after a number, found 'a'"],
    ["SELECT * FROM entries WHERE sequence = 1.2.3", "1:43", "expected a digit, space or operator after a number, found '.'"],
    ["SELECT * FROM entries WHERE name ! 'a'", "1:34", "expected a keyword, column, literal, operator or punctuation, found '!'"],
    ["SELECT * FROM entries WHERE name = 'a'\u00a0", "1:39", "expected a keyword, column, literal, operator or punctuation, found U+00A0"],
    // Injection-shaped input: statements, unions and comments are simply not part of the grammar.
    // The whole text is read into tokens first, so the comment is reported before the second statement.
    [
      "SELECT * FROM entries WHERE name = ''; DROP TABLE entries; --'",
      "1:60",
      "expected a keyword, column, literal, operator or punctuation, found '-'",
    ],
    ["SELECT * FROM entries WHERE name = ''; DROP TABLE entries", "1:40", "expected end of query, found identifier 'DROP'"],
    ["SELECT * FROM entries; DROP TABLE entries", "1:24", "expected end of query, found identifier 'DROP'"],
    [
      "SELECT * FROM entries WHERE name = 'a' UNION SELECT * FROM entries",
      "1:40",
      "expected AND, OR, ORDER BY, LIMIT, ';' or end of query, found identifier 'UNION'",
    ],
    [
      "SELECT * FROM entries UNION SELECT * FROM entries",
      "1:23",
      "expected WHERE, ORDER BY, LIMIT, ';' or end of query, found identifier 'UNION'",
    ],
    ["SELECT * FROM entries -- comment", "1:23", "expected a keyword, column, literal, operator or punctuation, found '-'"],
    ["SELECT * FROM entries WHERE name = 'a' --", "1:40", "expected a keyword, column, literal, operator or punctuation, found '-'"],
    ["SELECT * FROM entries /* comment */", "1:23", "expected a keyword, column, literal, operator or punctuation, found '/'"],
    ["SELECT * FROM entries WHERE name = 'a' OR 1 = 1", "1:43", "expected a column, NOT or '(', found number 1"],
    ["SELECT * FROM entries WHERE data.'x' = 1", "1:34", "expected a key of letters, digits, '_' or '-' after '.', found '''"],
    ["SELECT * FROM entries WHERE data. x = 1", "1:34", "expected a key of letters, digits, '_' or '-' after '.', found space"],
    [
      "SELECT * FROM entries WHERE data.x y = 1",
      "1:36",
      "expected an operator (= != <> < <= > >= IN LIKE IS CONTAINS), found identifier 'y'",
    ],
    ['SELECT * FROM entries WHERE data.x"y" = 1', "1:35", "expected a keyword, column, literal, operator or punctuation, found '\"'"],
    ["SELECT * FROM entries WHERE data.a..b = 1", "1:36", "expected a key of letters, digits, '_' or '-' after '.', found '.'"],
    ["SELECT * FROM entries WHERE data.ключ = 1", "1:34", "expected a key of letters, digits, '_' or '-' after '.', found U+043A"],
    ["SELECT * FROM entries WHERE name = 'a'\\", "1:39", "expected a keyword, column, literal, operator or punctuation, found '\\'"],
  ];

  it.each(cases)("%j", (text, at, detail) => {
    expect(failure(text)).toEqual({ at, detail });
  });

  it("puts the position in the violation's description", () => {
    const error = (() => {
      try {
        parseQuery("SELECT * FROM users");
      } catch (e) {
        return e as QueryError;
      }
      throw new Error("not rejected");
    })();
    expect(error.violations).toEqual([{ field: "query", description: "line 1, column 15: expected entries, found identifier 'users'" }]);
    expect(error.message).toBe("query: line 1, column 15: expected entries, found identifier 'users'");
  });
});

describe("bounds", () => {
  const base = "SELECT * FROM entries WHERE ";

  it(`accepts a query of exactly ${MAX_QUERY_BYTES} bytes and rejects one more`, () => {
    const prefix = "SELECT * FROM entries WHERE description = '";
    const fill = (n: number) => `${prefix}${"x".repeat(n - prefix.length - 1)}'`;
    expect(() => parseQuery(fill(MAX_QUERY_BYTES))).not.toThrow();
    expect(failure(fill(MAX_QUERY_BYTES + 1))).toEqual({ at: "-", detail: "query is 4097 bytes; at most 4096 bytes (4 KiB) are allowed" });
  });

  it("counts bytes, not characters", () => {
    const prefix = "SELECT * FROM entries WHERE description = '";
    // "é" is two bytes in UTF-8.
    const text = `${prefix}${"é".repeat(2027)}'`;
    expect(text.length).toBeLessThan(MAX_QUERY_BYTES);
    expect(failure(text).detail).toBe("query is 4098 bytes; at most 4096 bytes (4 KiB) are allowed");
  });

  const predicates = (n: number) => Array.from({ length: n }, (_, i) => `sequence = ${i}`).join(" OR ");

  it(`accepts ${MAX_PREDICATES} predicates and rejects ${MAX_PREDICATES + 1}`, () => {
    const query = parseQuery(base + predicates(MAX_PREDICATES));
    expect(query.where).toMatchObject({ kind: "or" });
    const text = base + predicates(MAX_PREDICATES + 1);
    const column = text.lastIndexOf("sequence") + 1;
    expect(failure(text)).toEqual({ at: `1:${column}`, detail: "too many predicates: at most 64 are allowed" });
  });

  it("counts predicates across the whole tree", () => {
    const text = `${base}(${predicates(32)}) AND NOT (${predicates(33)})`;
    expect(failure(text).detail).toBe("too many predicates: at most 64 are allowed");
  });

  const parens = (n: number) => `${"(".repeat(n)}name = 'a'${")".repeat(n)}`;

  it(`accepts ${MAX_NESTING} nested parentheses and rejects ${MAX_NESTING + 1}`, () => {
    expect(parsed(base + parens(MAX_NESTING))).toEqual(where(cmp(col("name"), "=", "a")));
    expect(failure(base + parens(MAX_NESTING + 1))).toEqual({
      at: `1:${base.length + MAX_NESTING + 1}`,
      detail: "nesting too deep: at most 16 levels of parentheses and NOT are allowed",
    });
  });

  it("counts NOT and parentheses together", () => {
    expect(() => parseQuery(base + "NOT ".repeat(8) + parens(8))).not.toThrow();
    const text = base + "NOT ".repeat(9) + parens(8);
    expect(failure(text)).toEqual({
      at: `1:${base.length + 9 * 4 + 8}`,
      detail: "nesting too deep: at most 16 levels of parentheses and NOT are allowed",
    });
  });

  it("sibling parentheses do not add up", () => {
    const text = base + Array.from({ length: 4 }, () => parens(MAX_NESTING)).join(" AND ");
    expect(() => parseQuery(text)).not.toThrow();
  });

  it(`accepts LIMIT ${MAX_LIMIT} and rejects ${MAX_LIMIT + 1}`, () => {
    expect(parseQuery(`SELECT * FROM entries LIMIT ${MAX_LIMIT}`).limit).toBe(MAX_LIMIT);
    expect(failure(`SELECT * FROM entries LIMIT ${MAX_LIMIT + 1}`)).toEqual({
      at: "1:29",
      detail: "expected LIMIT at most 10000, found number 10001",
    });
    expect(failure("SELECT * FROM entries LIMIT 99999999999999999999").detail).toBe(
      "expected LIMIT at most 10000, found number 99999999999999999999",
    );
  });
});

describe("checkQuery accepts", () => {
  const cases: string[] = [
    "SELECT * FROM entries",
    `SELECT ${COLUMN_NAMES.join(", ")}, data.a.b FROM entries`,
    "SELECT * FROM entries WHERE entry_did = 'did:web:example.com:skill:x@1.0.0'",
    "SELECT * FROM entries WHERE name LIKE 'web%' AND description CONTAINS 'search' AND content_hash IS NOT NULL",
    "SELECT * FROM entries WHERE version >= '1.2.0' AND version < '2.0.0-rc.1'",
    "SELECT * FROM entries WHERE version IN ('1.0.0', '1.1.0') OR version LIKE '1.%'",
    "SELECT * FROM entries WHERE published_at >= '2026-01-01' AND published_at < '2026-11-21T10:00:00.000Z'",
    "SELECT * FROM entries WHERE published_at > '2026-02-28T23:59:60+01:00'",
    "SELECT * FROM entries WHERE sequence > 100 AND sequence NOT IN (1, 2)",
    "SELECT * FROM entries WHERE bond_amount >= '100 USDC' OR bond_amount IN ('0.5 ETH') OR bond_amount IS NULL OR bond_amount LIKE '% USDC'",
    "SELECT * FROM entries WHERE tags CONTAINS 'search'",
    "SELECT * FROM entries WHERE status = 'revoked' OR status IN ('active')",
    "SELECT * FROM entries WHERE is_latest = TRUE AND is_latest != FALSE",
    "SELECT * FROM entries WHERE data.n > 1.5 AND data.s = 'x' AND data.b = TRUE AND data.list CONTAINS 3 AND data.k IS NULL AND data.s LIKE 'a%'",
    `SELECT * FROM entries WHERE data.${"k".repeat(64)} = 1`,
    "SELECT * FROM entries ORDER BY version DESC, published_at, sequence, bond_amount, is_latest, status, data.rank",
  ];

  it.each(cases)("%s", (text) => {
    expect(checkQuery(parseQuery(text)).checked).toBe(true);
  });

  it("spells out * as every column", () => {
    expect(checkQuery(parseQuery("SELECT * FROM entries")).selected.map((c) => (c.kind === "column" ? c.name : ""))).toEqual(COLUMN_NAMES);
  });
});

describe("checkQuery rejects", () => {
  const everyColumn = `a column (${COLUMN_NAMES.join(", ")} or data.<key>)`;
  const cases: Array<[string, string, string]> = [
    ["SELECT foo FROM entries", "1:8", `expected ${everyColumn}, found unknown column 'foo'`],
    ["SELECT * FROM entries WHERE Name = 'a'", "1:29", `expected ${everyColumn}, found unknown column 'Name'`],
    ["SELECT * FROM entries WHERE data = 'a'", "1:29", `expected ${everyColumn}, found unknown column 'data'`],
    ["SELECT * FROM entries WHERE entries.name = 'a'", "1:29", `expected ${everyColumn}, found unknown column 'entries.name'`],
    ["SELECT * FROM entries WHERE pg_sleep = 1", "1:29", `expected ${everyColumn}, found unknown column 'pg_sleep'`],
    ["SELECT * FROM entries ORDER BY secret", "1:32", `expected ${everyColumn}, found unknown column 'secret'`],
    [
      `SELECT * FROM entries WHERE data.${"k".repeat(65)} = 1`,
      "1:29",
      `expected data keys of 1-64 letters, digits, '_' or '-', found 'data.${"k".repeat(65)}'`,
    ],
    [
      "SELECT * FROM entries WHERE sequence LIKE '1%'",
      "1:29",
      "expected an operator for number column 'sequence' (= != < <= > >= IN), found LIKE",
    ],
    [
      "SELECT * FROM entries WHERE is_latest CONTAINS 'x'",
      "1:29",
      "expected an operator for boolean column 'is_latest' (= !=), found CONTAINS",
    ],
    ["SELECT * FROM entries WHERE is_latest IN (TRUE)", "1:29", "expected an operator for boolean column 'is_latest' (= !=), found IN"],
    ["SELECT * FROM entries WHERE tags < 'a'", "1:29", "expected an operator for tags column 'tags' (CONTAINS), found <"],
    ["SELECT * FROM entries WHERE tags = 'a'", "1:29", "expected an operator for tags column 'tags' (CONTAINS), found ="],
    [
      "SELECT * FROM entries WHERE published_at LIKE '2026%'",
      "1:29",
      "expected an operator for time column 'published_at' (= != < <= > >= IN), found LIKE",
    ],
    ["SELECT * FROM entries WHERE status < 'b'", "1:29", "expected an operator for status column 'status' (= != IN), found <"],
    [
      "SELECT * FROM entries WHERE version CONTAINS '1'",
      "1:29",
      "expected an operator for semver column 'version' (= != < <= > >= IN LIKE), found CONTAINS",
    ],
    ["SELECT * FROM entries WHERE entry_did = 5", "1:41", "expected a string for 'entry_did', found number 5"],
    ["SELECT * FROM entries WHERE name IN ('a', TRUE)", "1:43", "expected a string for 'name', found TRUE"],
    ["SELECT * FROM entries WHERE description CONTAINS 3", "1:50", "expected a string for 'description', found number 3"],
    ["SELECT * FROM entries WHERE tags CONTAINS FALSE", "1:43", "expected a string for 'tags', found FALSE"],
    [
      "SELECT * FROM entries WHERE version > 'latest'",
      "1:39",
      "expected a SemVer version string such as '1.2.3' for 'version', found string 'latest'",
    ],
    [
      "SELECT * FROM entries WHERE version = 'v1.0.0'",
      "1:39",
      "expected a SemVer version string such as '1.2.3' for 'version', found string 'v1.0.0'",
    ],
    [
      "SELECT * FROM entries WHERE version IN ('1.0.0', '1.0')",
      "1:50",
      "expected a SemVer version string such as '1.2.3' for 'version', found string '1.0'",
    ],
    ["SELECT * FROM entries WHERE version = 1", "1:39", "expected a SemVer version string such as '1.2.3' for 'version', found number 1"],
    [
      "SELECT * FROM entries WHERE published_at > 'yesterday'",
      "1:44",
      "expected a date '2026-01-01' or an RFC 3339 time for 'published_at', found string 'yesterday'",
    ],
    [
      "SELECT * FROM entries WHERE published_at > '2026-02-30'",
      "1:44",
      "expected a date '2026-01-01' or an RFC 3339 time for 'published_at', found string '2026-02-30'",
    ],
    [
      "SELECT * FROM entries WHERE published_at > '2026-01-01 10:00:00'",
      "1:44",
      "expected a date '2026-01-01' or an RFC 3339 time for 'published_at', found string '2026-01-01 10:00:00'",
    ],
    ["SELECT * FROM entries WHERE sequence = '5'", "1:40", "expected an integer for 'sequence', found string '5'"],
    ["SELECT * FROM entries WHERE sequence > 1.5", "1:40", "expected an integer for 'sequence', found number 1.5"],
    [
      "SELECT * FROM entries WHERE bond_amount > 100",
      "1:43",
      "expected an amount string such as '100 USDC' for 'bond_amount', found number 100",
    ],
    [
      "SELECT * FROM entries WHERE bond_amount > '100'",
      "1:43",
      "expected an amount string such as '100 USDC' for 'bond_amount', found string '100'",
    ],
    ["SELECT * FROM entries WHERE is_latest = 'true'", "1:41", "expected TRUE or FALSE for 'is_latest', found string 'true'"],
    ["SELECT * FROM entries WHERE is_latest = 1", "1:41", "expected TRUE or FALSE for 'is_latest', found number 1"],
    [
      "SELECT * FROM entries WHERE status = 'deleted'",
      "1:38",
      "expected 'active', 'deprecated', 'yanked', 'quarantined', 'revoked', 'removed' for 'status', found string 'deleted'",
    ],
    [
      "SELECT * FROM entries WHERE name = 'a' AND NOT (name = 'b' OR sequence = 'x''; --')",
      "1:74",
      "expected an integer for 'sequence', found string 'x''; --'",
    ],
    ["SELECT * FROM entries ORDER BY tags", "1:32", "expected a column that can be ordered, found tags column 'tags'"],
    [
      "SELECT * FROM entries ORDER BY revoked_at",
      "1:32",
      "expected a column that can be ordered, found 'revoked_at', which is null for some entries",
    ],
    [
      "SELECT * FROM entries WHERE published_at IS NULL",
      "1:29",
      "expected an operator for time column 'published_at' (= != < <= > >= IN), found IS NULL",
    ],
  ];

  it.each(cases)("%j", (text, at, detail) => {
    expect(failure(text, true)).toEqual({ at, detail });
  });
});

describe("isDateOrTime", () => {
  it.each([
    ["2026-01-01", true],
    ["2024-02-29", true],
    ["2026-11-21T10:00:00Z", true],
    ["2026-11-21t10:00:00.123456z", true],
    ["2026-11-21T10:00:00-05:30", true],
    ["2025-02-29", false],
    ["2026-13-01", false],
    ["2026-1-1", false],
    ["2026-11-21T24:00:00Z", false],
    ["2026-11-21T10:00:00", false],
    ["2026-11-21T10:00Z", false],
    ["", false],
  ])("%s → %s", (text, expected) => {
    expect(isDateOrTime(text)).toBe(expected);
  });
});
