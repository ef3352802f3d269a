import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREATE_ARGUMENT_COLUMNS } from "../../src/storage/knex-entry-repository.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * registry_create_entry is called with named arguments built from the TypeScript side's list;
 * the database's own catalogue says what the function takes and what the table holds, so a
 * column added on one side and not the other fails here rather than at the first publish.
 */

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

interface Argument {
  readonly name: string;
  readonly type: string;
}

async function functionArguments(): Promise<Argument[]> {
  const result = await db.database.knex.raw(`
    select a.name, format_type(a.type, null) as type
      from pg_proc p, unnest(p.proargnames, p.proallargtypes, p.proargmodes) with ordinality as a(name, type, mode, position)
     where p.proname = 'registry_create_entry' and a.mode = 'i'
     order by a.position`);
  return result.rows as Argument[];
}

async function tableColumnTypes(): Promise<Map<string, string>> {
  const result = await db.database.knex.raw(`
    select a.attname as name, format_type(a.atttypid, null) as type
      from pg_attribute a
     where a.attrelid = 'entries'::regclass and a.attnum > 0 and not a.attisdropped`);
  return new Map((result.rows as Argument[]).map((row) => [row.name, row.type]));
}

describe("registry_create_entry and the TypeScript side", () => {
  it("take the same arguments, by name, and only those", async () => {
    const declared = (await functionArguments()).map((argument) => argument.name);
    expect([...declared].sort()).toEqual(CREATE_ARGUMENT_COLUMNS.map((column) => `p_${column}`).sort());
  });

  it("each argument has the type of the column it fills", async () => {
    const columns = await tableColumnTypes();
    const mismatches = (await functionArguments())
      .map((argument) => ({ ...argument, column: columns.get(argument.name.slice(2)) }))
      .filter((argument) => argument.column !== argument.type);
    expect(mismatches).toEqual([]);
  });
});
