import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENTRY_FIELDS } from "../../src/domain/entry-fields.js";
import { validateEntry } from "../../src/domain/entry-rules.js";
import { createKnexEntryRepository } from "../../src/storage/knex-entry-repository.js";
import { createArgumentsOf } from "../../src/storage/entry-row.js";
import { generateKeyPair, signEntry } from "../../src/sdk/signing.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * registry_create_entry takes the new row as one jsonb record named by column (migration 0016);
 * the database's own catalogue says what the table holds, so a column added on one side and not
 * the other fails here rather than at the first publish.
 */

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** Columns the function itself fills: what the registry assigns, and the row's creation time. */
const ASSIGNED_COLUMNS = [...ENTRY_FIELDS.filter((field) => field.setBy === "registry").map((field) => field.column), "created_at"];

async function tableColumns(): Promise<string[]> {
  const result = await db.database.knex.raw(`
    select a.attname as name from pg_attribute a
     where a.attrelid = 'entries'::regclass and a.attnum > 0 and not a.attisdropped`);
  return (result.rows as { name: string }[]).map((row) => row.name);
}

async function validV2Entry() {
  const keys = await generateKeyPair();
  const fields = {
    payloadType: "registry.entry.v2",
    entryDid: "did:reg:main:skill:record-shape@1.0.0-rc.1",
    entryType: "skill",
    version: "1.0.0-rc.1",
    publisherDid: keys.did,
    publishedAt: "2026-01-02T03:04:05.678Z",
    description: "every column",
    tags: ["a", "b"],
    data: { nested: { list: [1, "two"] } },
    contentHash: `sha256:${"0".repeat(64)}`,
    bondAmount: "12.5 USDC",
    homepage: "https://example.com/record-shape",
    repository: "https://git.example.com/record-shape",
    license: "Apache-2.0 OR MIT",
  } as const;
  const signature = await signEntry(fields, keys.privateKey);
  return validateEntry({ ...fields, signature }, { entryTypes: ["skill"], now: new Date("2026-01-02T03:05:00Z") });
}

describe("registry_create_entry and the TypeScript side", () => {
  it("takes one jsonb record", async () => {
    const result = await db.database.knex.raw(
      "select pg_get_function_identity_arguments(p.oid) as args from pg_proc p where p.proname = 'registry_create_entry'",
    );
    expect(result.rows).toEqual([{ args: "p_entry jsonb" }]);
  });

  it("gets a value for every column but those it assigns, and nothing else", async () => {
    const record = Object.keys(createArgumentsOf(await validV2Entry()));
    const columns = await tableColumns();
    expect([...record].sort()).toEqual(columns.filter((column) => !ASSIGNED_COLUMNS.includes(column)).sort());
  });

  it("stores the record as sent, and what it assigns", async () => {
    const entry = await validV2Entry();
    const stored = await createKnexEntryRepository(db.database.knex).createEntry(entry);
    const row = await db.database.knex("entries").where({ entry_did: entry.entryDid }).first();
    const { data, ...sent } = createArgumentsOf(entry);
    expect(row).toMatchObject({ ...sent, status: "active", revoked_at: null, revocation_reason: null, is_latest: true });
    expect(row.data).toEqual(data);
    expect(row.sequence).toBe(stored.sequence.toString());
    expect(row.created_at).toBeInstanceOf(Date);
  });
});
