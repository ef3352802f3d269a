import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runIssuerKeyCommand } from "../../src/cli/issuer-key-command.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

let dir: string;
let db: TestDatabase | undefined;
let config: { databaseUrl: string; dataDir: string; tokenMaxTtlSeconds: number };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "issuer-key-"));
  // On Postgres the command runs against a fresh database; otherwise against an embedded one.
  if ((process.env.DATABASE_URL ?? "") !== "") {
    db = await createTestDatabase();
    await db.database.close();
  }
  config = { databaseUrl: db?.url ?? "", dataDir: join(dir, "data"), tokenMaxTtlSeconds: 3600 };
});
afterAll(async () => {
  if (db !== undefined) await db.drop().catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

async function run(...args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runIssuerKeyCommand(args, config, {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
  });
  return { code, stdout, stderr };
}

it("rotates the signing key and keeps the old one published as retired", async () => {
  const before = await run("list");
  expect(before.code).toBe(0);
  const [first] = before.stdout.trim().split("\n");
  expect(first).toMatch(/^[A-Za-z0-9_-]{43}\tcurrent$/);
  const oldKid = first!.split("\t")[0];

  const rotated = await run("rotate");
  expect(rotated.code).toBe(0);
  const newKid = rotated.stdout.trim();
  expect(newKid).not.toBe(oldKid);

  const after = await run("list");
  expect(after.stdout.trim().split("\n")).toEqual([`${newKid}\tcurrent`, `${oldKid}\tretired`]);
});

it("answers an unknown subcommand with usage and exit code 2", async () => {
  const result = await run("spin");
  expect(result.code).toBe(2);
  expect(result.stderr).toContain("issuer-key rotate");
});
