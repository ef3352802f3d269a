import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { registryClient, type RegistryCalls } from "../support/protocol-clients.js";
import { parseQuery } from "../../src/discovery/query-language/parser.js";
import { checkQuery } from "../../src/discovery/query-language/columns.js";
import { planDiscovery } from "../../src/discovery/discovery-plan.js";
import { structuredQuery } from "../../src/discovery/structured-conditions.js";
import { filterSql, orderKeys } from "../../src/discovery/discovery-sql.js";
import { seedRegistry, type SeededRegistry } from "./discovery-fixture.js";

/**
 * SQL injection attempts through the running server are refused or taken as plain values, and
 * the compiler never puts request text into SQL: it leaves only as bound values.
 */

let db: TestDatabase;
let registry: TestRegistry;
let rest: RegistryCalls;
let seeded: SeededRegistry;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database, { rateLimitRps: 0 });
  rest = registryClient("rest", registry.url);
  seeded = await seedRegistry(registry);
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

const HOSTILE_VALUES = [
  "x' OR '1'='1",
  "'; DROP TABLE entries; --",
  "x') UNION SELECT * FROM root_tokens --",
  "1; SELECT pg_sleep(10)",
  "/* comment */ 'a'",
  "$$; drop table entries; $$",
  "\\'; delete from entries; --",
  "%' OR 1=1 --",
];

async function databaseIsIntact(): Promise<void> {
  const [row] = await db.database.knex("entries").count<{ count: string }[]>({ count: "*" });
  expect(Number(row?.count)).toBe(seeded.all.length);
  const tables = await db.database.knex.raw(
    "select count(*)::int as n from information_schema.tables where table_name in ('entries', 'root_tokens', 'entry_names')",
  );
  expect(tables.rows[0].n).toBe(3);
}

describe("hostile text in values is only ever a value", () => {
  for (const value of HOSTILE_VALUES) {
    it(`structured: ${value}`, async () => {
      for (const [field, op] of [
        ["name", "="],
        ["description", "CONTAINS"],
        ["data.license", "="],
        ["data.license", "CONTAINS"],
        ["name", "IN"],
      ]) {
        const result = await rest.discover({ conditions: [{ field, op, value: op === "IN" ? [value] : value }] });
        expect(result.code, `${field} ${op}: ${result.message}`).toBe("ok");
        expect(result.body.entries).toEqual([]);
      }
    });

    it(`query language: ${value}`, async () => {
      const literal = `'${value.replaceAll("'", "''")}'`;
      for (const predicate of [
        `name = ${literal}`,
        `description CONTAINS ${literal}`,
        `description LIKE ${literal}`,
        `data.license = ${literal}`,
        `name IN (${literal}, 'x')`,
      ]) {
        const result = await rest.query({ query: `SELECT * FROM entries WHERE ${predicate}` });
        if (result.code !== "ok") {
          // Only a pattern the LIKE rules refuse may be an error, and then a clear one.
          expect(result.message, predicate).toContain("LIKE pattern");
          continue;
        }
        expect(result.body.entries, predicate).toEqual([]);
      }
    });
  }

  it("leaves the database as it was", databaseIsIntact);
});

const REFUSED_QUERIES = [
  "SELECT * FROM entries WHERE name = 'x' OR 1=1",
  "SELECT * FROM entries WHERE name = 'x' UNION SELECT * FROM root_tokens",
  "SELECT * FROM entries; DELETE FROM entries",
  "SELECT * FROM entries WHERE name = 'x'; --",
  "SELECT * FROM entries /* hi */",
  'SELECT * FROM entries WHERE name = "x"',
  "SELECT * FROM entries WHERE pg_sleep(10) IS NULL",
  "SELECT token_hash FROM entries",
  "SELECT * FROM root_tokens",
  "SELECT * FROM entries WHERE entries.name = 'x'",
  "SELECT * FROM entries WHERE name = name",
  "SELECT * FROM entries WHERE data.a'b = 'x'",
  "SELECT * FROM entries WHERE data.a.b;drop = 'x'",
  "SELECT * FROM entries ORDER BY 1",
  "SELECT * FROM entries ORDER BY (select 1)",
  "SELECT * FROM entries LIMIT 1 OFFSET 5",
  "SELECT * FROM entries WHERE name = 'x' \\g",
  "SELECT count(*) FROM entries",
  "SELECT * FROM entries WHERE name = E'\\x27'",
];

const REFUSED_FIELDS = [
  "name; drop table entries",
  "data.x') or 1=1 --",
  "data.a;drop",
  "data.",
  "data..a",
  "(select 1)",
  "entries.name",
  "NAME",
  "token_hash",
];

describe("SQL that is not the query language is refused before anything runs", () => {
  for (const query of REFUSED_QUERIES) {
    it(query, async () => {
      const result = await rest.query({ query });
      expect(result.httpStatus).toBe(400);
      expect(result.fields).toEqual(["query"]);
      expect(result.message).toMatch(/line \d+, column \d+: /);
    });
  }

  for (const field of REFUSED_FIELDS) {
    it(`structured field ${JSON.stringify(field)}`, async () => {
      const result = await rest.discover({ conditions: [{ field, op: "=", value: "x" }] });
      expect(result.httpStatus).toBe(400);
      expect(result.fields).toEqual(["conditions[0].field"]);
    });
  }

  it("leaves the database as it was", databaseIsIntact);
});

describe("the compiler puts request text only into bindings", () => {
  const MARK = "zq9Injected";
  const texts = [
    `SELECT * FROM entries WHERE name = '${MARK}' OR description CONTAINS '${MARK}' OR description LIKE '%${MARK}%'`,
    `SELECT * FROM entries WHERE data.${MARK}.x = '${MARK}' AND data.${MARK} CONTAINS '${MARK}' AND data.${MARK} IS NULL ORDER BY data.${MARK} DESC`,
    `SELECT * FROM entries WHERE tags CONTAINS '${MARK}' AND name NOT IN ('${MARK}', 'b') AND data.${MARK} LIKE '${MARK}%' AND data.${MARK} > 'a'`,
  ];

  for (const text of texts) {
    it(text.slice(0, 80), () => {
      const checked = checkQuery(parseQuery(text));
      const plan = planDiscovery("query", checked.query, checked.selected);
      const filter = filterSql(plan.where!);
      const keys = orderKeys(plan.order);
      const sql = [filter.sql, ...keys.map((key) => key.expression.sql)].join(" ");
      expect(sql).not.toContain(MARK);
      const bindings = [...filter.bindings, ...keys.flatMap((key) => key.expression.bindings)].map(String);
      expect(bindings.some((binding) => binding.includes(MARK))).toBe(true);
      // Each placeholder has its value: nothing shifts a value into the text.
      expect(filter.sql.split("?").length - 1).toBe(filter.bindings.length);
    });
  }

  it("structured values too", () => {
    const plan = planDiscovery(
      "discover",
      structuredQuery({
        entryType: MARK,
        conditions: [
          { field: "name", op: "IN", value: [MARK] },
          { field: `data.${MARK}`, op: "CONTAINS", value: MARK },
        ],
      }),
      "entry",
    );
    const filter = filterSql(plan.where!);
    expect(filter.sql).not.toContain(MARK);
    expect(filter.sql.split("?").length - 1).toBe(filter.bindings.length);
  });
});
