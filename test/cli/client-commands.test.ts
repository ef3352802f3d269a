import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodePrivateKey, keyPairFromSeed, type KeyPair } from "../../src/sdk/index.js";
import { childEnv, freePort, PROJECT_ROOT, REGISTRY_BIN, runCli, temporaryDirectory } from "../support/child-processes.js";
import { startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * The publisher's and consumer's commands, run as `node bin/registry.js ...` against a running
 * registry: login, publish, resolve, versions, discover and query across pages, revoke, wait, and
 * the exit code of each kind of failure.
 */

/**
 * A case runs the CLI up to seven times, each a node process that compiles the TypeScript as it
 * starts: seconds apiece on a busy machine, more than the default 30 s in all.
 */
const CLI_CASE_MS = 120_000;

let db: TestDatabase;
let registry: TestRegistry;
let scratch: { path: string; remove(): Promise<void> };
let publisher: KeyPair;
let keyText: string;
/** A name no other run shares, so discover and query see only this file's entries. */
const name = `cli-${randomBytes(4).toString("hex")}`;
const did = `did:reg:main:skill:${name}`;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  scratch = await temporaryDirectory("cli-client-");
  // A key whose base64url text starts with "-" (one generated key in 64): it must still be a value.
  const seed = randomBytes(32);
  seed[0] = 0xf8;
  keyText = encodePrivateKey(seed);
  publisher = await keyPairFromSeed(seed);
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
  await scratch?.remove();
});

/** The CLI's environment: this registry, this test's config directory, and the publisher's key. */
function env(overrides: Record<string, string | undefined> = {}) {
  return childEnv({
    REGISTRY_URL: registry.url,
    REGISTRY_CONFIG_DIR: join(scratch.path, "config"),
    REGISTRY_SIGNING_KEY: undefined,
    REGISTRY_ROOT_TOKEN: undefined,
    ...overrides,
  });
}

async function cli(args: string[], overrides: Record<string, string | undefined> = {}) {
  return runCli(args, env(overrides));
}

async function writeManifest(file: string, version: string, fields: Record<string, unknown> = {}): Promise<void> {
  const manifest = {
    entryDid: `${did}@${version}`,
    entryType: "skill",
    version,
    description: `The ${name} skill, ${version}`,
    tags: [name, "cli"],
    contentHash: `sha256:${"cd".repeat(32)}`,
    ...fields,
  };
  await writeFile(file, JSON.stringify(manifest));
}

describe("the publisher's flow", { timeout: CLI_CASE_MS }, () => {
  it("logs in with a root token, keeping it in a 0600 file in a 0700 directory", async () => {
    const rootToken = await registry.rootToken(publisher.did, ["registry.publish.skill"]);
    const result = await cli(["login", "--root-token", rootToken, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const body = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(body).toMatchObject({ registry: registry.url, subject: publisher.did, scopes: ["registry.publish.skill"] });
    expect(Object.keys(body).sort()).toEqual(["credentialsFile", "expiresAt", "registry", "scopes", "subject"]);
    expect((await stat(join(scratch.path, "config"))).mode & 0o777).toBe(0o700);
    expect((await stat(body.credentialsFile as string)).mode & 0o777).toBe(0o600);
  });

  it("publishes a manifest directory, hashing a content directory as docs/cli.md says, with a key starting with '-'", async () => {
    const manifestDir = join(scratch.path, "skill");
    const content = join(scratch.path, "content");
    await mkdir(join(content, "lib"), { recursive: true });
    await writeFile(join(content, "b.txt"), "bee");
    await writeFile(join(content, "lib", "a.txt"), "ay");
    await mkdir(manifestDir);
    await writeManifest(join(manifestDir, "registry.json"), "1.0.0", { contentHash: undefined });
    const result = await cli(["publish", manifestDir, "--content", content, "--key", keyText, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const entry = JSON.parse(result.stdout) as Record<string, string>;
    // The documented algorithm: sorted relative paths, each as path NUL size NUL bytes.
    const expected = createHash("sha256").update("b.txt\u00003\u0000bee").update("lib/a.txt\u00002\u0000ay").digest("hex");
    expect(entry).toMatchObject({
      entryDid: `${did}@1.0.0`,
      publisherDid: publisher.did,
      contentHash: `sha256:${expected}`,
      status: "active",
    });
    expect(entry.publishedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.000)?Z$/);
  });

  it("publishes manifest files with a key file, hashing a content file", async () => {
    const contentFile = join(scratch.path, "content.bin");
    await writeFile(contentFile, "hello");
    const keyFile = join(scratch.path, "publisher.key");
    await writeFile(keyFile, keyText, { mode: 0o600 });
    for (const version of ["1.1.0", "1.2.0"]) {
      const manifest = join(scratch.path, `${version}.json`);
      await writeManifest(manifest, version);
      const result = await cli(["publish", manifest, "--content", contentFile], { REGISTRY_SIGNING_KEY: `@${keyFile}` });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(`published ${did}@${version} (sequence ${result.stdout.match(/sequence (\d+)/)?.[1]})\n`);
    }
    const resolved = await cli(["resolve", `${did}@1.2.0`, "--json"]);
    expect(JSON.parse(resolved.stdout).contentHash).toBe(`sha256:${createHash("sha256").update("hello").digest("hex")}`);
  });

  it("resolves the latest version and lists every version", async () => {
    const resolved = await cli(["resolve", did, "--json"]);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(JSON.parse(resolved.stdout)).toMatchObject({ entryDid: `${did}@1.2.0`, version: "1.2.0", status: "active" });

    const versions = await cli(["versions", did, "--json"]);
    expect(versions.code, versions.stderr).toBe(0);
    const body = JSON.parse(versions.stdout) as { versions: { version: string; status: string }[] };
    expect(body.versions.map((v) => [v.version, v.status])).toEqual([
      ["1.2.0", "active"],
      ["1.1.0", "active"],
      ["1.0.0", "active"],
    ]);
    const human = await cli(["versions", did]);
    expect(human.stdout.split("\n")[0]).toMatch(/^1\.2\.0\tactive\t/);
  });

  it("discovers across pages with --all, stops at --limit, and reports progress when asked", async () => {
    const all = await cli(["discover", "--tag", name, "--page-size", "1", "--all", "--json", "--progress"]);
    expect(all.code, all.stderr).toBe(0);
    const body = JSON.parse(all.stdout) as { entries: { version: string }[]; total: number };
    expect(body.entries.map((entry) => entry.version)).toEqual(["1.2.0", "1.1.0", "1.0.0"]);
    expect(body).toMatchObject({ total: 3, totalIsLowerBound: false });
    // As the API answers the last page: no nextCursor once nothing is left.
    expect(Object.keys(body).sort()).toEqual(["entries", "total", "totalIsLowerBound"]);
    expect(all.stderr).toBe("fetched 1 (1 page)\nfetched 2 (2 pages)\nfetched 3 (3 pages)\n");

    const limited = await cli(["discover", "--type", "skill", "--where", `tags CONTAINS ${name}`, "--limit", "2", "--json"]);
    expect(limited.code, limited.stderr).toBe(0);
    const first = JSON.parse(limited.stdout) as { entries: { version: string }[]; nextCursor: string };
    expect(first.entries.map((entry) => entry.version)).toEqual(["1.2.0", "1.1.0"]);
    expect(first.nextCursor).toEqual(expect.any(String));
    expect(limited.stderr).toBe("");

    // --limit asks only for what it shows, so nextCursor resumes right after the last result shown.
    const rest = await cli(["discover", "--type", "skill", "--where", `tags CONTAINS ${name}`, "--cursor", first.nextCursor, "--json"]);
    expect(rest.code, rest.stderr).toBe(0);
    const second = JSON.parse(rest.stdout) as { entries: { version: string }[]; nextCursor?: string };
    expect(second.entries.map((entry) => entry.version)).toEqual(["1.0.0"]);
    expect(second.nextCursor).toBeUndefined();
  });

  it("queries across pages with --all", async () => {
    const ql = `SELECT entry_did, version FROM entries WHERE name = '${name}' ORDER BY version ASC`;
    const result = await cli(["query", ql, "--page-size", "2", "--all", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    // QueryEntriesResponse's names: the rows are `entries`, and no nextCursor after the last page.
    expect(JSON.parse(result.stdout)).toEqual({
      entries: ["1.0.0", "1.1.0", "1.2.0"].map((version) => ({ entryDid: `${did}@${version}`, version })),
    });
    const human = await cli(["query", ql, "--limit", "1"]);
    expect(human.stdout).toBe(`${did}@1.0.0\t1.0.0\n`);
  });

  it("revokes a version with a reason starting with '-', after which resolve shows it revoked and discover hides it", async () => {
    const revoked = await cli(["revoke", `${did}@1.2.0`, "--reason", "-x: superseded", "--key", keyText, "--json"]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ entries: [expect.objectContaining({ entryDid: `${did}@1.2.0`, status: "revoked" })] });

    const resolved = await cli(["resolve", `${did}@1.2.0`]);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(resolved.stdout).toContain(`${did}@1.2.0  revoked`);
    expect(resolved.stdout).toContain("-x: superseded");

    const hidden = await cli(["discover", "--tag", name, "--json"]);
    expect(JSON.parse(hidden.stdout).entries).toHaveLength(2);
    const shown = await cli(["discover", "--tag", name, "--include-revoked", "--json"]);
    expect(JSON.parse(shown.stdout).entries).toHaveLength(3);

    const onlyRevoked = await cli(["discover", "--tag", name, "--where", "version = 1.2.0"]);
    expect(onlyRevoked.code).toBe(0);
    expect(onlyRevoked.stdout).toBe("");
    expect(onlyRevoked.stderr).toMatch(/revoked entries are hidden: --include-revoked shows them/);
    const byRevocation = await cli(["discover", "--tag", name, "--where", "revokedAt > 2020-01-01"]);
    expect(byRevocation.stdout).toBe(`${did}@1.2.0\trevoked\tThe ${name} skill, 1.2.0\n`);
    expect(byRevocation.stderr).toBe("");
  });
});

describe("every protocol the SDK speaks", { timeout: CLI_CASE_MS }, () => {
  it.each(["connect", "connect-binary", "grpc-web", "grpc"])(
    "resolves, pages through discover and answers not-found over %s",
    async (transport) => {
      const resolved = await cli(["resolve", `${did}@1.1.0`, "--transport", transport, "--json"]);
      expect(resolved.code, resolved.stderr).toBe(0);
      expect(JSON.parse(resolved.stdout)).toMatchObject({ entryDid: `${did}@1.1.0`, publisherDid: publisher.did });

      const found = await cli([
        "discover",
        "--tag",
        name,
        "--include-revoked",
        "--page-size",
        "2",
        "--all",
        "--transport",
        transport,
        "--json",
      ]);
      expect(found.code, found.stderr).toBe(0);
      expect(JSON.parse(found.stdout).entries.map((entry: { version: string }) => entry.version)).toEqual(["1.2.0", "1.1.0", "1.0.0"]);

      const missing = await cli(["resolve", `${did}-missing`, "--transport", transport]);
      expect(missing.code).toBe(3);
    },
  );
});

describe("the kept credentials", () => {
  it("replace an expired access token with a fresh exchange on the next write", async () => {
    const file = join(scratch.path, "config", "credentials.json");
    const kept = JSON.parse(await readFile(file, "utf8")) as {
      registries: Record<string, { accessTokens: { accessToken: string; expiresAt: string }[] }>;
    };
    const record = kept.registries[registry.url]!;
    // An expired token that would also be refused if sent: the write must exchange a new one.
    record.accessTokens = record.accessTokens.map((token) => ({ ...token, accessToken: "expired", expiresAt: "2000-01-01T00:00:00Z" }));
    await writeFile(file, JSON.stringify(kept), { mode: 0o600 });

    const manifest = join(scratch.path, "2.0.0.json");
    await writeManifest(manifest, "2.0.0");
    const result = await cli(["publish", manifest, "--key", keyText]);
    expect(result.code, result.stderr).toBe(0);
    const after = JSON.parse(await readFile(file, "utf8")) as typeof kept;
    const tokens = after.registries[registry.url]!.accessTokens;
    expect(tokens).toHaveLength(1);
    expect(tokens[0]!.accessToken).not.toBe("expired");
    expect(Date.parse(tokens[0]!.expiresAt)).toBeGreaterThan(Date.now());
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it("come from REGISTRY_ROOT_TOKEN when --root-token is not given", async () => {
    const rootToken = await registry.rootToken(publisher.did, ["registry.publish.*"]);
    const configDir = join(scratch.path, "xdg");
    const result = await cli(["login", "--scopes", "registry.publish.*"], {
      REGISTRY_ROOT_TOKEN: rootToken,
      REGISTRY_CONFIG_DIR: undefined,
      XDG_CONFIG_HOME: configDir,
    });
    expect(result.code, result.stderr).toBe(0);
    const credentials = join(configDir, "open-registry", "credentials.json");
    expect(result.stdout).toBe(`logged in to ${registry.url} as ${publisher.did} (registry.publish.*); credentials in ${credentials}\n`);
    expect((await stat(credentials)).mode & 0o777).toBe(0o600);
  });
});

/** `registry ...args` with `input` piped to its stdin. */
function cliWithStdin(args: string[], input: string, overrides: Record<string, string | undefined>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [REGISTRY_BIN, ...args],
      { env: env(overrides), cwd: PROJECT_ROOT, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr }),
    );
    child.stdin!.end(input);
  });
}

it("login reads the root token from stdin when neither --root-token nor REGISTRY_ROOT_TOKEN gives one", async () => {
  const rootToken = await registry.rootToken(publisher.did, ["registry.publish.skill"]);
  const result = await cliWithStdin(["login", "--json"], `${rootToken}\n`, { REGISTRY_CONFIG_DIR: join(scratch.path, "stdin") });
  expect(result.code, result.stderr).toBe(0);
  expect(JSON.parse(result.stdout)).toMatchObject({ subject: publisher.did });
  const kept = JSON.parse(await readFile(join(scratch.path, "stdin", "credentials.json"), "utf8"));
  expect(kept.registries[registry.url].rootToken).toBe(rootToken);
});

describe("exit codes", () => {
  it("3 for an entry that does not exist, quoting the server", async () => {
    const result = await cli(["resolve", `did:reg:main:skill:${name}-missing`]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^registry: not_found: /);
  });

  it("4 when not logged in, and when the registry refuses the credentials", async () => {
    const manifest = join(scratch.path, "auth.json");
    await writeManifest(manifest, "9.0.0");
    const notLoggedIn = await cli(["publish", manifest, "--key", keyText], { REGISTRY_CONFIG_DIR: join(scratch.path, "nobody") });
    expect(notLoggedIn.code).toBe(4);
    expect(notLoggedIn.stderr).toMatch(/not logged in/);
    const badLogin = await cli(["login", "--root-token", "rt_not-a-token", "--json"], {
      REGISTRY_CONFIG_DIR: join(scratch.path, "nobody"),
    });
    expect(badLogin.code).toBe(4);
    expect(JSON.parse(badLogin.stderr)).toMatchObject({ error: { code: "unauthenticated" } });
  });

  it("1 for a refused field, naming the field", async () => {
    const manifest = join(scratch.path, "invalid.json");
    await writeManifest(manifest, "not-semver", { entryDid: `${did}@not-semver` });
    const result = await cli(["publish", manifest, "--key", keyText]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^registry: invalid_argument:\n/);
    expect(result.stderr).toMatch(/\n {2}version: must be a SemVer/);
    const json = await cli(["publish", manifest, "--key", keyText, "--json"]);
    expect(json.code).toBe(1);
    const error = JSON.parse(json.stderr) as { error: { code: string; violations: { field: string }[] } };
    expect(error.error.code).toBe("invalid_argument");
    expect(error.error.violations.map((violation) => violation.field)).toContain("version");
  });

  it("2 for a usage error", async () => {
    expect((await cli(["resolve"])).code).toBe(2);
    expect((await cli(["discover", "--limit", "zero"])).code).toBe(2);
    const where = await cli(["discover", "--where", "tags"]);
    expect(where.code).toBe(2);
    expect(where.stderr).toBe(`registry: --where "tags": expected 'field op value'\n`);
    expect((await cli(["resolve", did, "--frobnicate"])).code).toBe(2);
    const badUrl = await cli(["resolve", did, "--registry", "localhost:8080"]);
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toMatch(/is not a registry URL/);
  });

  it("5 when the registry cannot be reached", async () => {
    const port = await freePort();
    const result = await cli(["resolve", did, "--registry", `http://127.0.0.1:${port}`]);
    expect(result.code).toBe(5);
    expect(result.stderr).toBe(`registry: cannot reach the registry at http://127.0.0.1:${port} (ECONNREFUSED)\n`);
  });
});

describe("registry wait", () => {
  it("returns 0 once a running registry is ready", async () => {
    const result = await cli(["wait", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ registry: registry.url, ready: true });
  });

  it("returns 5 when nothing answers within the timeout", async () => {
    const port = await freePort();
    const result = await cli(["wait", "--timeout", "1s", "--registry", `http://127.0.0.1:${port}`]);
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/was not ready within 1000 ms \(last: ECONNREFUSED\)/);
  });
});

describe("registry key generate --out", () => {
  it("writes the key with mode 0600, then refuses to overwrite it", async () => {
    const file = join(scratch.path, "generated.json");
    const first = await cli(["key", "generate", "--out", file]);
    expect(first.code, first.stderr).toBe(0);
    const printed = JSON.parse(first.stdout) as Record<string, string>;
    expect(Object.keys(printed).sort()).toEqual(["did", "file", "publicKey"]);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const written = await readFile(file, "utf8");
    expect(JSON.parse(written).did).toBe(printed.did);

    const second = await cli(["key", "generate", "--out", file]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/already exists; refusing to overwrite/);
    expect(await readFile(file, "utf8")).toBe(written);
  });

  it("a key file's path given without @ is refused with how to name it", async () => {
    const file = join(scratch.path, "hint.json");
    expect((await cli(["key", "generate", "--out", file])).code).toBe(0);
    const manifest = join(scratch.path, "hint-manifest.json");
    await writeManifest(manifest, "9.9.9");
    const result = await cli(["publish", manifest, "--key", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`to read the key file ${file}, write --key @${file}`);
  });

  it("prints the whole key without --out, as before", async () => {
    const result = await cli(["key", "generate"]);
    expect(result.code).toBe(0);
    expect(Object.keys(JSON.parse(result.stdout)).sort()).toEqual(["did", "privateKey", "publicKey"]);
  });
});
