import { access, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodePrivateKey } from "../../src/sdk/index.js";
import { childEnv, runCli, temporaryDirectory } from "../support/child-processes.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * The commands about the kept credentials, run as `node bin/registry.js ...` against a running
 * registry: a write with REGISTRY_ROOT_TOKEN and no login, whoami and logout, and publish
 * --dry-run, which signs and checks an entry and sends nothing.
 */

/** Several CLI processes a case, each compiling the sources as it starts: slow on a busy machine. */
const CLI_CASE_MS = 180_000;

let db: TestDatabase;
let registry: TestRegistry;
let scratch: { path: string; remove(): Promise<void> };
let publisher: TestPublisher;
let keyText: string;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  scratch = await temporaryDirectory("cli-credentials-");
  publisher = await createPublisher();
  keyText = encodePrivateKey(publisher.keys.privateKey);
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
  await scratch?.remove();
});

function cli(args: string[], configDir: string, overrides: Record<string, string | undefined> = {}) {
  return runCli(
    args,
    childEnv({
      REGISTRY_URL: registry.url,
      REGISTRY_CONFIG_DIR: join(scratch.path, configDir),
      REGISTRY_ROOT_TOKEN: undefined,
      ...overrides,
    }),
  );
}

async function manifest(name: string, version: string, fields: Record<string, unknown> = {}): Promise<string> {
  const file = join(scratch.path, `${name}-${version}.json`);
  const entry = {
    entryDid: `did:reg:main:skill:${name}@${version}`,
    entryType: "skill",
    version,
    description: `The ${name} skill`,
    contentHash: `sha256:${"ab".repeat(32)}`,
    ...fields,
  };
  await writeFile(file, JSON.stringify(entry));
  return file;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

describe("REGISTRY_ROOT_TOKEN without a login", { timeout: CLI_CASE_MS }, () => {
  it("is exchanged for the write and kept nowhere", async () => {
    const rootToken = await registry.rootToken(publisher.did, ["registry.publish.skill"]);
    const file = await manifest("by-root-token", "1.0.0");
    const published = await cli(["publish", file, "--key", keyText], "root-token-only", { REGISTRY_ROOT_TOKEN: rootToken });
    expect(published.code, published.stderr).toBe(0);
    expect(published.stdout).toMatch(/^published did:reg:main:skill:by-root-token@1\.0\.0 \(sequence \d+\)\n$/);
    expect((await fetch(`${registry.url}/v1/entries/did:reg:main:skill:by-root-token@1.0.0`)).status).toBe(200);
    expect(await exists(join(scratch.path, "root-token-only", "credentials.json"))).toBe(false);

    const neither = await cli(["revoke", "did:reg:main:skill:by-root-token@1.0.0", "--reason", "x", "--key", keyText], "root-token-only");
    expect(neither.code).toBe(4);
    expect(neither.stderr).toBe(
      `registry: not logged in to ${registry.url}: run "registry login --registry ${registry.url}" first, or set REGISTRY_ROOT_TOKEN\n`,
    );
  });
});

describe("whoami and logout", { timeout: CLI_CASE_MS }, () => {
  it("show the kept login's subject, scopes and expiry, then forget it", async () => {
    const rootToken = await registry.rootToken(publisher.did, ["registry.publish.skill", "registry.admin"]);
    const login = await cli(["login", "--root-token", rootToken, "--scopes", "registry.publish.skill,registry.admin", "--json"], "who");
    expect(login.code, login.stderr).toBe(0);
    const loggedIn = JSON.parse(login.stdout) as { expiresAt: string; credentialsFile: string };

    const who = await cli(["whoami", "--json"], "who");
    expect(who.code, who.stderr).toBe(0);
    expect(JSON.parse(who.stdout)).toEqual({
      registry: registry.url,
      subject: publisher.did,
      accessTokens: [{ scopes: ["registry.publish.skill", "registry.admin"], expiresAt: loggedIn.expiresAt }],
      credentialsFile: loggedIn.credentialsFile,
    });
    const human = await cli(["whoami"], "who");
    expect(human.stdout).toBe(
      `logged in to ${registry.url} as ${publisher.did}\n` +
        `  registry.publish.skill, registry.admin  expires ${loggedIn.expiresAt}\n` +
        `credentials in ${loggedIn.credentialsFile}\n`,
    );
    // Another registry's URL has no login: nothing is said about this one's.
    const elsewhere = await cli(["whoami", "--registry", "http://127.0.0.1:1"], "who");
    expect(elsewhere.code).toBe(4);
    expect(elsewhere.stderr).toBe("registry: not logged in to http://127.0.0.1:1\n");

    const logout = await cli(["logout", "--json"], "who");
    expect(logout.code, logout.stderr).toBe(0);
    expect(JSON.parse(logout.stdout)).toEqual({ registry: registry.url, removed: true, credentialsFile: loggedIn.credentialsFile });
    // The only registry it held: the file, root token and all, is gone.
    expect(await exists(loggedIn.credentialsFile)).toBe(false);

    const gone = await cli(["whoami"], "who", { REGISTRY_ROOT_TOKEN: rootToken });
    expect(gone.code).toBe(4);
    expect(gone.stderr).toBe(`registry: not logged in to ${registry.url}; writes use REGISTRY_ROOT_TOKEN, which is set\n`);
    const again = await cli(["logout"], "who");
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`not logged in to ${registry.url}: nothing to remove\n`);
  });
});

describe("publish --dry-run", { timeout: CLI_CASE_MS }, () => {
  it("prints the signed entry and sends nothing: the registry has no such entry, and takes the printed body as is", async () => {
    const did = "did:reg:main:skill:dry-run@1.0.0";
    const file = await manifest("dry-run", "1.0.0", { tags: ["dry"] });
    const logSize = async () => ((await (await fetch(`${registry.url}/v1/changes?limit=1`)).json()) as { size: string }).size;
    const sizeBefore = await logSize();
    // No login and no root token: a dry run needs neither.
    const dry = await cli(["publish", file, "--key", keyText, "--dry-run"], "dry");
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toBe(`dry run: ${did} is valid and signed; nothing was sent\n`);
    const signed = JSON.parse(dry.stdout) as Record<string, unknown>;
    expect(signed).toMatchObject({ entryDid: did, publisherDid: publisher.did, payloadType: "registry.entry.v2", tags: ["dry"] });
    expect(signed.signature).toMatch(/^ed25519:/);

    expect((await fetch(`${registry.url}/v1/entries/${did}`)).status).toBe(404);
    expect(await logSize()).toBe(sizeBefore);

    // What it printed is what publishing sends: the registry takes it, signature and all.
    const token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
    const created = await fetch(`${registry.url}/v1/entries`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(signed),
    });
    expect(created.status, await created.clone().text()).toBe(201);
  });

  it("refuses an entry the registry would refuse, naming each field, as the registry names them", async () => {
    const file = await manifest("dry-bad", "1.0", { tags: ["Not A Tag"] });
    const dry = await cli(["publish", file, "--key", keyText, "--dry-run", "--json"], "dry");
    expect(dry.code).toBe(1);
    expect(dry.stdout).toBe("");
    const { error } = JSON.parse(dry.stderr) as { error: { code: string; violations: { field: string }[] } };
    expect(error.code).toBe("invalid_argument");
    expect(error.violations.map((violation) => violation.field)).toEqual(expect.arrayContaining(["version", "tags[0]"]));
  });
});
