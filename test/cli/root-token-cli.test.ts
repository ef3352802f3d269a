import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { childEnv, runCli, temporaryDirectory } from "../support/child-processes.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, usesPostgres, type TestDatabase, seededDataDirectory } from "../support/test-database.js";

/**
 * `registry root-token ...` and `registry migrate` as real processes. On Postgres the commands
 * run while a registry serves the same database; on PGlite (one process at a time) they run on a
 * data directory that the test opens itself once the CLI has exited.
 */

const CLI_MS = 120_000;
const postgres = usesPostgres();

let db: TestDatabase | undefined;
let dataDir: { path: string; remove(): Promise<void> } | undefined;
let env: NodeJS.ProcessEnv;
let registry: TestRegistry | undefined;

beforeAll(async () => {
  if (postgres) {
    db = await createTestDatabase();
    env = childEnv({ DATABASE_URL: db.url });
    registry = await startTestRegistry(db.database);
  } else {
    dataDir = await seededDataDirectory("registry-root-token-");
    env = childEnv({ REGISTRY_DATA_DIR: dataDir.path });
  }
}, CLI_MS);

afterAll(async () => {
  await registry?.close();
  await db?.drop();
  await dataDir?.remove();
});

/** Runs `body` with the database the CLI wrote to: the shared one on Postgres, else the data directory opened after the CLI exited. */
async function withCliDatabase<T>(body: (database: Database) => Promise<T>): Promise<T> {
  if (db !== undefined) return body(db.database);
  const database = await openDatabase({ dataDir: dataDir!.path });
  try {
    return await body(database);
  } finally {
    await database.close();
  }
}

async function exchange(url: string, rootToken: string): Promise<number> {
  const response = await fetch(`${url}/v1/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ scopes: ["registry.publish.skill"] }),
  });
  return response.status;
}

interface Listed {
  id: string;
  subject: string;
  scopes: string[];
  description: string;
  createdAt: string;
  revokedAt?: string;
}

async function listJson(): Promise<Listed[]> {
  const listed = await runCli(["root-token", "list", "--json"], env);
  expect(listed.code, listed.stderr).toBe(0);
  return (JSON.parse(listed.stdout) as { rootTokens: Listed[] }).rootTokens;
}

function secretForms(token: string): string[] {
  const hash = createHash("sha256").update(token, "utf8").digest();
  return [token, token.slice("regrt_".length), hash.toString("hex"), hash.toString("base64"), hash.toString("base64url")];
}

describe("registry root-token", () => {
  const minted: Array<{ token: string; subject: string; id?: string }> = [];

  it(
    "create prints the token and nothing else on stdout",
    async () => {
      for (const scopes of ["registry.publish.skill", "registry.publish.skill,registry.publish.agent"]) {
        const subject = (await createPublisher()).did;
        const created = await runCli(["root-token", "create", "--subject", subject, "--scopes", scopes], env);
        expect(created.code, created.stderr).toBe(0);
        expect(created.stdout).toMatch(/^regrt_[A-Za-z0-9_-]+\n$/);
        // At least 256 bits of randomness: 43 base64url characters.
        expect(created.stdout.trim().length).toBeGreaterThanOrEqual("regrt_".length + 43);
        expect(created.stderr).toMatch(/rt_[0-9a-f]{16}/);
        expect(created.stderr).not.toContain(created.stdout.trim());
        minted.push({ token: created.stdout.trim(), subject });
      }
      expect(minted[0]!.token).not.toBe(minted[1]!.token);
    },
    CLI_MS,
  );

  it(
    "list shows id, subject and scopes, never the token or its hash",
    async () => {
      const table = await runCli(["root-token", "list"], env);
      expect(table.code, table.stderr).toBe(0);
      const records = await listJson();
      expect(records).toHaveLength(2);
      for (const [index, { token, subject }] of minted.entries()) {
        const record = records.find((r) => r.subject === subject);
        expect(record).toBeDefined();
        expect(record!.id).toMatch(/^rt_[0-9a-f]{16}$/);
        expect(record).not.toHaveProperty("revokedAt");
        expect(record!.scopes).toEqual(index === 0 ? ["registry.publish.skill"] : ["registry.publish.skill", "registry.publish.agent"]);
        minted[index]!.id = record!.id;
        expect(table.stdout).toContain(record!.id);
        expect(table.stdout).toContain(subject);
        for (const secret of secretForms(token)) {
          expect(table.stdout).not.toContain(secret);
          expect(JSON.stringify(records)).not.toContain(secret);
        }
      }
      expect(table.stdout).toContain("registry.publish.skill,registry.publish.agent");
    },
    CLI_MS,
  );

  it(
    "revoke <id> revokes that token only, and a server refuses it afterwards",
    async () => {
      const [revokedOne, keptOne] = minted as [(typeof minted)[0], (typeof minted)[0]];
      if (registry !== undefined) expect(await exchange(registry.url, revokedOne.token)).toBe(200);

      const revoked = await runCli(["root-token", "revoke", revokedOne.id!], env);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.stdout).toContain(revokedOne.id!);
      const records = await listJson();
      expect(records.find((r) => r.id === revokedOne.id)!.revokedAt).toMatch(/Z$/);
      expect(records.find((r) => r.id === keptOne.id)).not.toHaveProperty("revokedAt");

      if (registry !== undefined) {
        // Postgres: the running server sees the revocation at once.
        expect(await exchange(registry.url, revokedOne.token)).toBe(401);
        expect(await exchange(registry.url, keptOne.token)).toBe(200);
      } else {
        // PGlite: a server started on the directory after the CLI exited.
        await withCliDatabase(async (database) => {
          const server = await startTestRegistry(database);
          try {
            expect(await exchange(server.url, revokedOne.token)).toBe(401);
            expect(await exchange(server.url, keptOne.token)).toBe(200);
          } finally {
            await server.close();
          }
        });
      }
    },
    CLI_MS,
  );

  it(
    "keeps only SHA-256 hashes of the tokens at rest",
    async () => {
      await withCliDatabase(async (database) => {
        const rows = await database.knex("root_tokens").select("*");
        expect(rows).toHaveLength(2);
        for (const { token, id } of minted) {
          const row = rows.find((r) => r.id === id);
          expect(Buffer.from(row.token_hash)).toEqual(createHash("sha256").update(token, "utf8").digest());
          const stored = JSON.stringify(rows, (_key, value) =>
            value?.type === "Buffer" ? Buffer.from(value.data).toString("hex") : value,
          );
          expect(stored).not.toContain(token);
          expect(stored).not.toContain(token.slice("regrt_".length));
        }
      });
    },
    CLI_MS,
  );

  it(
    "revoke of an unknown id fails with a message, and of a malformed id too",
    async () => {
      const unknown = await runCli(["root-token", "revoke", `rt_${randomBytes(8).toString("hex")}`], env);
      expect(unknown.code).not.toBe(0);
      expect(unknown.stderr).toMatch(/no root token/);
      const malformed = await runCli(["root-token", "revoke", "not-an-id"], env);
      expect(malformed.code).not.toBe(0);
      expect(malformed.stderr).toContain("not-an-id");
    },
    CLI_MS,
  );

  it.each([
    ["a did:web subject", ["--subject", "did:web:x", "--scopes", "registry.publish.skill"], /subject/],
    [
      "a did:key that is not Ed25519",
      ["--subject", "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme", "--scopes", "registry.publish.skill"],
      /subject/,
    ],
    [
      "an unknown scope",
      ["--subject", "SUBJECT", "--scopes", "registry.publish.skill,registry.publish.nothing"],
      /registry\.publish\.nothing/,
    ],
    ["no scopes", ["--subject", "SUBJECT"], /scopes/],
    ["no subject", ["--scopes", "registry.publish.skill"], /subject/],
  ])(
    "create refuses %s: non-zero exit, a message on stderr, nothing on stdout",
    async (_label, args, message) => {
      const subject = (await createPublisher()).did;
      const refused = await runCli(["root-token", "create", ...args.map((a) => (a === "SUBJECT" ? subject : a))], env);
      expect(refused.code).not.toBe(0);
      expect(refused.stdout).toBe("");
      expect(refused.stderr).toMatch(message);
    },
    CLI_MS,
  );

  it(
    "stored nothing for the refused creates",
    async () => {
      expect((await listJson()).map((r) => r.id).sort()).toEqual(minted.map((m) => m.id).sort());
    },
    CLI_MS,
  );
});

describe("registry migrate", () => {
  it(
    "applies the migrations to a fresh embedded database, then says it is up to date",
    async () => {
      const fresh = await temporaryDirectory("registry-migrate-");
      try {
        const migrateEnv = childEnv({ REGISTRY_DATA_DIR: fresh.path });
        const first = await runCli(["migrate"], migrateEnv);
        expect(first.code, first.stderr).toBe(0);
        expect(first.stdout).toMatch(/^applied: .*0001-entries.*0002-auth/);
        const second = await runCli(["migrate"], migrateEnv);
        expect(second.code, second.stderr).toBe(0);
        expect(second.stdout).toBe("already up to date\n");
      } finally {
        await fresh.remove();
      }
    },
    CLI_MS,
  );

  it.runIf(postgres)(
    "does the same on a fresh Postgres database, and on one a server is using",
    async () => {
      const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
      const name = `registry_migrate_${randomBytes(6).toString("hex")}`;
      await admin.connect();
      try {
        await admin.query(`create database ${name}`);
        const url = new URL(process.env.DATABASE_URL!);
        url.pathname = `/${name}`;
        const migrateEnv = childEnv({ DATABASE_URL: url.toString() });
        const first = await runCli(["migrate"], migrateEnv);
        expect(first.code, first.stderr).toBe(0);
        expect(first.stdout).toMatch(/^applied: .*0001-entries.*0002-auth/);
        const second = await runCli(["migrate"], migrateEnv);
        expect(second.stdout).toBe("already up to date\n");
        const shared = await runCli(["migrate"], env);
        expect(shared.code, shared.stderr).toBe(0);
        expect(shared.stdout).toBe("already up to date\n");
      } finally {
        await admin.query(`drop database if exists ${name} with (force)`);
        await admin.end();
      }
    },
    CLI_MS,
  );
});
