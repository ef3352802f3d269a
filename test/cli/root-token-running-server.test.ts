import { stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRootTokenCommand } from "../../src/cli/root-token-command.js";
import { adminCredentialPath, readAdminCredential } from "../../src/storage/admin-credential-file.js";
import { childEnv, freePort, runCli, startServerProcess, temporaryDirectory, type ServerProcess } from "../support/child-processes.js";
import { createPublisher } from "../support/registry-fixture.js";

/**
 * Issue 10's bootstrap: `registry root-token ...` while `registry serve` holds the embedded
 * database in the same data directory, as real processes. The CLI cannot open the database then,
 * and asks the server through its admin API instead, with the same output. Always on an embedded
 * data directory (the children are given no DATABASE_URL): on Postgres the CLI opens the database
 * itself, as test/cli/root-token-cli.test.ts shows.
 */

const CLI_MS = 120_000;

let parent: { path: string; remove(): Promise<void> };
let dataDir: { path: string };
let port: number;
let env: NodeJS.ProcessEnv;
let server: ServerProcess | undefined;

beforeAll(async () => {
  parent = await temporaryDirectory("registry-bootstrap-");
  // Not there yet: the server creates it.
  dataDir = { path: join(parent.path, "data") };
  port = await freePort();
  env = childEnv({ REGISTRY_DATA_DIR: dataDir.path, PORT: String(port) });
  server = await startServerProcess([], port, env);
}, CLI_MS);

afterAll(async () => {
  await server?.stop().catch(() => {});
  await parent?.remove();
});

async function exchange(rootToken: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/v1/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ scopes: ["registry.publish.skill"] }),
  });
  return response.status;
}

describe("registry root-token while the server holds the embedded database", () => {
  let created: { id: string; token: string; subject: string };
  let listedWhileRunning: { json: string; table: string };

  it("the server writes its admin credential for the operator alone", async () => {
    expect((await stat(dataDir.path)).mode & 0o777).toBe(0o700);
    const file = await stat(adminCredentialPath(dataDir.path));
    expect(file.mode & 0o777).toBe(0o600);
    expect(await readAdminCredential(dataDir.path)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it(
    "create prints a root token that works at POST /v1/tokens, with the direct path's output",
    async () => {
      const publisher = await createPublisher();
      const result = await runCli(
        ["root-token", "create", "--subject", publisher.did, "--scopes", "registry.publish.skill", "--description", "first"],
        env,
        CLI_MS,
      );
      expect(result.code, result.stderr).toBe(0);
      const token = result.stdout.trim();
      expect(result.stdout).toBe(`${token}\n`);
      expect(token).toMatch(/^regrt_[A-Za-z0-9_-]{43}$/);
      const id = /^created root token (rt_[0-9a-f]{16}) for /.exec(result.stderr)?.[1] as string;
      // Not verbose: nothing says which way the command went.
      expect(result.stderr).toBe(`created root token ${id} for ${publisher.did} (registry.publish.skill)\n`);
      expect(await exchange(token)).toBe(200);
      created = { id, token, subject: publisher.did };
    },
    CLI_MS,
  );

  it(
    "list and revoke work the same way, and a revoked root token is refused",
    async () => {
      const listed = await runCli(["root-token", "list", "--json"], env, CLI_MS);
      expect(listed.code, listed.stderr).toBe(0);
      const records = JSON.parse(listed.stdout).rootTokens;
      expect(records).toContainEqual(
        expect.objectContaining({
          id: created.id,
          subject: created.subject,
          scopes: ["registry.publish.skill"],
          description: "first",
        }),
      );
      // As the API answers: an unset revokedAt is left out.
      expect(records.find((record: { id: string }) => record.id === created.id)).not.toHaveProperty("revokedAt");

      const revoked = await runCli(["root-token", "revoke", created.id], env, CLI_MS);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.stdout).toBe(`revoked ${created.id}\n`);
      expect(await exchange(created.token)).toBe(401);

      const unknown = await runCli(["root-token", "revoke", "rt_0000000000000000"], env, CLI_MS);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain("no root token has the id rt_0000000000000000");

      const json = await runCli(["root-token", "list", "--json"], env, CLI_MS);
      const table = await runCli(["root-token", "list"], env, CLI_MS);
      expect(table.stdout).toMatch(/^ID +SUBJECT +SCOPES +CREATED +REVOKED +DESCRIPTION\n/);
      listedWhileRunning = { json: json.stdout, table: table.stdout };
    },
    CLI_MS,
  );

  it("says which way it went only when asked (--verbose)", async () => {
    const lines = { stdout: "", stderr: "" };
    const io = { stdout: (text: string) => void (lines.stdout += text), stderr: (text: string) => void (lines.stderr += text) };
    const config = {
      databaseUrl: "",
      dataDir: dataDir.path,
      entryTypes: ["skill", "agent"],
      host: "127.0.0.1",
      port,
      registryUrl: undefined,
    };
    expect(await runRootTokenCommand(["list", "--json", "--verbose"], config, io)).toBe(0);
    expect(lines.stderr).toBe(
      `registry root-token: the embedded database is in use; asking the server at http://127.0.0.1:${port} through its admin API\n`,
    );
    expect(lines.stdout).toBe(listedWhileRunning.json);
  });

  it(
    "a credential the server did not write is refused, and the CLI says so",
    async () => {
      const path = adminCredentialPath(dataDir.path);
      const real = (await readAdminCredential(dataDir.path)) as string;
      await writeFile(path, `${Buffer.alloc(32, 1).toString("base64url")}\n`, { mode: 0o600 });
      try {
        const result = await runCli(["root-token", "list"], env, CLI_MS);
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(`the server at http://127.0.0.1:${port} refused the credential in ${path}`);
        expect(result.stdout).toBe("");
      } finally {
        await writeFile(path, `${real}\n`, { mode: 0o600 });
      }
    },
    CLI_MS,
  );

  it(
    "a clean shutdown removes the credential, and the CLI then opens the database itself, listing the same",
    async () => {
      const credential = (await readAdminCredential(dataDir.path)) as string;
      expect(await server!.logLines("admin API on")).toHaveLength(1);
      expect(server!.output()).not.toContain(credential);
      const stopped = await server!.stop(10_000);
      server = undefined;
      expect(stopped.code).toBe(0);
      expect(await readAdminCredential(dataDir.path)).toBeUndefined();
      const json = await runCli(["root-token", "list", "--json"], env, CLI_MS);
      expect(json.code, json.stderr).toBe(0);
      expect(json.stdout).toBe(listedWhileRunning.json);
      const table = await runCli(["root-token", "list"], env, CLI_MS);
      expect(table.stdout).toBe(listedWhileRunning.table);
      const notes: string[] = [];
      const io = { stdout: () => {}, stderr: (text: string) => void notes.push(text) };
      const config = { databaseUrl: "", dataDir: dataDir.path, entryTypes: ["skill", "agent"], port };
      expect(await runRootTokenCommand(["list", "--verbose"], config, io)).toBe(0);
      expect(notes).toEqual([`registry root-token: working on the embedded database in ${dataDir.path} directly\n`]);
    },
    CLI_MS,
  );

  it(
    "with ADMIN_API=false there is no admin API, and the CLI says to stop the server or enable it",
    async () => {
      const offEnv = { ...env, ADMIN_API: "false" };
      server = await startServerProcess([], port, offEnv);
      expect(await readAdminCredential(dataDir.path)).toBeUndefined();
      const rest = await fetch(`http://127.0.0.1:${port}/v1/admin/root-tokens`);
      expect(rest.status).toBe(404);
      const publisher = await createPublisher();
      const result = await runCli(
        ["root-token", "create", "--subject", publisher.did, "--scopes", "registry.publish.skill"],
        offEnv,
        CLI_MS,
      );
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(`is in use by process`);
      expect(result.stderr).toContain("offers no admin API");
      expect(result.stderr).toContain("stop it and run this again, or restart it without ADMIN_API=false");
    },
    CLI_MS,
  );
});
