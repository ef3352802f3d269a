import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKnexAuthRepository } from "../../src/storage/knex-auth-repository.js";
import { createTokenIssuer } from "../../src/auth/token-issuer.js";
import { runRootTokenCommand, type RootTokenCommandConfig } from "../../src/cli/root-token-command.js";
import { UnauthenticatedError } from "../../src/errors.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { issuerConfig, randomDid } from "./auth-fixtures.js";

/**
 * The command opens its own database from the config, as the CLI does: the test's Postgres
 * database when DATABASE_URL is set, else a PGlite directory on disk that the test reopens.
 */
let config: RootTokenCommandConfig;
let testDatabase: TestDatabase | undefined;
let dataDir: string | undefined;

beforeAll(async () => {
  if ((process.env.DATABASE_URL ?? "") !== "") {
    testDatabase = await createTestDatabase();
    config = { databaseUrl: testDatabase.url!, dataDir: "", entryTypes: ["skill", "agent"] };
  } else {
    dataDir = await mkdtemp(join(tmpdir(), "registry-root-token-"));
    config = { databaseUrl: "", dataDir, entryTypes: ["skill", "agent"] };
    // Creating an on-disk PGlite database is slow; do it here, under the hook's longer timeout.
    await withDatabase((database) => migrateToLatest(database));
  }
});

afterAll(async () => {
  await testDatabase?.drop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

async function run(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runRootTokenCommand(args, config, {
    stdout: (text) => void out.push(text),
    stderr: (text) => void err.push(text),
  });
  return { code, stdout: out.join(""), stderr: err.join("") };
}

async function withDatabase<T>(work: (database: Database) => Promise<T>): Promise<T> {
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    return await work(database);
  } finally {
    await database.close();
  }
}

describe("registry root-token", () => {
  let token: string;
  let id: string;
  const subject = randomDid();

  it("create prints the token alone on stdout, and the token works", async () => {
    const result = await run(
      "create",
      "--subject",
      subject,
      "--scopes",
      "registry.publish.skill, registry.admin",
      "--description",
      "ci bot",
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^regrt_[A-Za-z0-9_-]{43}\n$/);
    token = result.stdout.trim();
    id = /rt_[0-9a-f]{16}/.exec(result.stderr)![0];

    await withDatabase(async (database) => {
      const issuer = createTokenIssuer({ repository: createKnexAuthRepository(database.knex), config: issuerConfig() });
      const issued = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });
      expect(issued.subject).toBe(subject);
      const { rows } = await database.knex.raw<{ rows: unknown[] }>("select * from root_tokens");
      expect(JSON.stringify(rows)).not.toContain(token.slice(6));
    });
  });

  it("list shows id, subject, scopes and times, never the token or its hash", async () => {
    const table = await run("list");
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+SUBJECT\s+SCOPES\s+CREATED\s+REVOKED\s+DESCRIPTION$/);
    expect(table.stdout).toContain(id);
    expect(table.stdout).toContain(subject);
    expect(table.stdout).toContain("registry.publish.skill,registry.admin");
    expect(table.stdout).not.toContain(token.slice(6));

    const json = await run("list", "--json");
    // As GET /v1/admin/root-tokens answers: the list named rootTokens, an unset revokedAt left out.
    const listed: Record<string, unknown>[] = JSON.parse(json.stdout).rootTokens;
    const mine = listed.find((item) => item.id === id)!;
    expect(mine).toMatchObject({ subject, scopes: ["registry.publish.skill", "registry.admin"], description: "ci bot" });
    expect(Object.keys(mine).sort()).toEqual(["createdAt", "description", "id", "scopes", "subject"]);
  });

  it("revoke makes the token unusable and shows in list; unknown ids fail", async () => {
    expect((await run("revoke", id)).code).toBe(0);
    expect((await run("revoke", id)).code).toBe(0);
    const missing = await run("revoke", "rt_0000000000000000");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("rt_0000000000000000");

    const listed: Record<string, unknown>[] = JSON.parse((await run("list", "--json")).stdout).rootTokens;
    expect(listed.find((item) => item.id === id)!.revokedAt).toMatch(/^\d{4}-\d\d-\d\dT/);

    await withDatabase(async (database) => {
      const issuer = createTokenIssuer({ repository: createKnexAuthRepository(database.knex), config: issuerConfig() });
      await expect(issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] })).rejects.toBeInstanceOf(UnauthenticatedError);
    });
  });

  it("refuses bad command lines with exit code 2 and prints nothing on stdout", async () => {
    const cases: string[][] = [
      [],
      ["frobnicate"],
      ["create", "--scopes", "registry.admin"],
      ["create", "--subject", "did:web:example.com", "--scopes", "registry.admin"],
      ["create", "--subject", "did:key:zNotAKey", "--scopes", "registry.admin"],
      ["create", "--subject", subject],
      ["create", "--subject", subject, "--scopes", "registry.publish.widget"],
      ["create", "--subject", subject, "--scopes", "registry.admin", "--bogus"],
      ["revoke"],
      ["revoke", "not-an-id"],
    ];
    for (const args of cases) {
      const result = await run(...args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stdout, args.join(" ")).toBe("");
      expect(result.stderr).toContain("Usage:");
    }
  });

  it("accepts the words after root-token or including it, and prints help", async () => {
    const help = await run("root-token", "--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("registry root-token create");
  });
});
