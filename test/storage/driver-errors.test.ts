import { afterAll, beforeAll, describe, expect, it } from "vitest";
import knexFactory from "knex";
import { InvalidArgumentError, UnavailableError } from "../../src/errors.js";
import { translateDriverErrors, UnstorableValueError } from "../../src/storage/driver-errors.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * The backstop behind the domain rules: a value the database refuses (SQLSTATE class 22) is the
 * request's fault and answers invalid_argument, without the driver's text; a database that cannot
 * be reached is unavailable. Real statements on the test database (PGlite or Postgres), so the
 * SQLSTATEs are the ones the driver really reports.
 */

let db: TestDatabase;
const quiet = { warn() {}, error() {}, deprecate() {}, debug() {} };

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function refusal(sql: string, bindings: readonly string[]): Promise<unknown> {
  return translateDriverErrors(() => db.database.knex.raw(sql, bindings)).then(
    () => expect.unreachable("the statement should have failed"),
    (error: unknown) => error,
  );
}

describe("data exceptions (SQLSTATE class 22)", () => {
  const cases = [
    { name: "NUL in text (22021)", sql: "select ?::text as t", bindings: ["a\u0000b"], code: "22021", says: "cannot store" },
    { name: "\\u0000 in jsonb (22P05)", sql: "select ?::jsonb as j", bindings: ['{"a":"\\u0000"}'], code: "22P05", says: "cannot store" },
    {
      name: "an unpaired surrogate escape in jsonb",
      sql: "select ?::jsonb as j",
      bindings: ['{"a":"\\ud800"}'],
      code: undefined,
      says: undefined,
    },
    { name: "text that is not JSON (22P02)", sql: "select ?::jsonb as j", bindings: ["not json"], code: "22P02", says: "cannot be stored" },
    { name: "a number out of range (22003)", sql: "select ?::int as i", bindings: ["99999999999"], code: "22003", says: "out of range" },
  ];

  it.each(cases)("$name is invalid_argument without driver text", async ({ sql, bindings, code, says }) => {
    const error = await refusal(sql, bindings);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toBeInstanceOf(UnstorableValueError);
    const refused = error as UnstorableValueError;
    expect(refused.violations.map((v) => v.field)).toEqual(["request"]);
    if (says !== undefined) expect(refused.message).toContain(says);
    // The driver's own words (and any quoted SQL or value) stay in the cause, for the log.
    const driverError = refused.cause as { code?: string; message: string };
    if (code !== undefined) expect(driverError.code).toBe(code);
    expect(driverError.code).toMatch(/^22/);
    expect(refused.message).not.toContain(driverError.message);
    expect(refused.message).not.toMatch(/select|jsonb|syntax|encoding|\$1/i);
  });
});

describe("failures that are not the request's", () => {
  it("a database that cannot be reached is unavailable", async () => {
    // Port 1 on loopback: nothing listens, so the connection is refused at once.
    const unreachable = knexFactory({
      client: "pg",
      connection: "postgres://postgres@127.0.0.1:1/none",
      pool: { min: 0, max: 1 },
      acquireConnectionTimeout: 5_000,
      log: quiet,
    });
    try {
      const error = await translateDriverErrors(() => unreachable.raw("select 1")).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnavailableError);
      expect((error as Error).message).toBe("the database is unavailable");
    } finally {
      await unreachable.destroy();
    }
  });

  it("an error of the statement itself (not class 22) stays unavailable", async () => {
    const error = await translateDriverErrors(() => db.database.knex.raw("select * from no_such_table")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
  });
});
