import { execFile, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseLogKey, verifyCheckpoint, verifyCheckpointsConsistent } from "../../src/sdk/log-verifier.js";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { scratchDirectory } from "../support/scratch-directories.js";
import { createTestDatabase, usesPostgres, withAdmin, type TestDatabase } from "../support/test-database.js";
import { mirrorDatabase, runMirrorCli, type MirrorDatabase } from "../mirror/mirror-fixture.js";

/**
 * The Postgres backup of docs/operations.md ("Backups and restore"), run as written: `pg_dump` of
 * a serving registry's database, `pg_restore` into a new database, and a registry on the restore
 * that answers as the original did, with its log, its keys and its tokens; and a mirror that
 * followed the original past the backup refusing the rolled-back log. On the Postgres lane
 * (DATABASE_URL) where the client tools are installed.
 */

const hasClientTools = ["pg_dump", "pg_restore", "psql"].every((tool) => spawnSync(tool, ["--version"]).status === 0);
const PUBLIC_URL = "http://registry.backup.test";
const SETTINGS = { publicUrl: PUBLIC_URL, logOrigin: "registry.backup.test/log" };
const SCOPES = ["registry.publish.skill"];
const NAMES = ["web-search", "summarize"] as const;
const ROUTES = [
  ...NAMES.map((name) => `/v1/entries/did:reg:main:skill:${name}@1.0.0`),
  "/v1/entries/did:reg:main:skill:web-search/versions",
  "/v1/changes",
  "/v1/log/checkpoint",
  "/v1/log/key",
  "/.well-known/jwks.json",
];

let source: TestDatabase;
let sourceRegistry: TestRegistry;
let restoredName: string;
let restoredUrl: string;
let restored: Database | undefined;
let restoredRegistry: TestRegistry | undefined;
let dumpDirectory: { path: string; remove(): Promise<void> };
const before = new Map<string, string>();
let publisher: Awaited<ReturnType<typeof createPublisher>>;
let rootToken: string;
let accessToken: string;
/** A mirror that followed the original past the backup. */
let mirror: MirrorDatabase | undefined;
const MIRROR_MS = 60_000;

function run(command: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${command} ${args.join(" ")}: ${error.message}\n${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

async function text(url: string): Promise<string> {
  const response = await fetch(url);
  const body = await response.text();
  expect(response.status, `${url}: ${body}`).toBe(200);
  return body;
}

async function post(url: string, token: string, body: unknown, status: number): Promise<Record<string, string>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.text();
  expect(response.status, answer).toBe(status);
  return JSON.parse(answer) as Record<string, string>;
}

/** The original's log key, as it published it before the backup. */
function logKey(): string {
  return (JSON.parse(before.get("/v1/log/key")!) as { verifierKey: string }).verifierKey;
}

async function checkpointOf(url: string, size: number): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const body = JSON.parse(await text(`${url}/v1/log/checkpoint`)) as { treeSize: string };
    if (body.treeSize === String(size)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no checkpoint of size ${size}`);
}

beforeAll(async () => {
  if (!usesPostgres() || !hasClientTools) return;
  source = await createTestDatabase();
  sourceRegistry = await startTestRegistry(source.database, SETTINGS);
  publisher = await createPublisher();
  rootToken = await sourceRegistry.rootToken(publisher.did, SCOPES);
  ({ accessToken } = (await post(`${sourceRegistry.url}/v1/tokens`, rootToken, { scopes: SCOPES }, 200)) as { accessToken: string });
  for (const name of NAMES) await post(`${sourceRegistry.url}/v1/entries`, accessToken, await publisher.entry(name, "1.0.0"), 201);
  await checkpointOf(sourceRegistry.url, NAMES.length);
  for (const route of ROUTES) before.set(route, await text(`${sourceRegistry.url}${route}`));
  dumpDirectory = await scratchDirectory("registry-dump-");
  restoredName = `registry_restored_${randomBytes(6).toString("hex")}`;
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${restoredName}`;
  restoredUrl = url.toString();
});

afterAll(async () => {
  await mirror?.remove();
  await restoredRegistry?.close();
  await restored?.close();
  await sourceRegistry?.close();
  await source?.drop();
  await dumpDirectory?.remove();
  if (restoredName !== undefined)
    await withAdmin(process.env.DATABASE_URL!, (client) => client.query(`drop database if exists ${restoredName} with (force)`));
});

const DESCRIPTION = "a registry's Postgres database dumped with pg_dump and restored with pg_restore";

describe.skipIf(!usesPostgres() || !hasClientTools)(DESCRIPTION, () => {
  it("dumps while the registry serves, and restores into a new database without errors", async () => {
    const dump = join(dumpDirectory.path, "registry.dump");
    await run("pg_dump", ["--format=custom", `--file=${dump}`, source.url!]);
    await run("psql", [process.env.DATABASE_URL!, "--command", `create database ${restoredName}`]);
    await run("pg_restore", ["--no-owner", "--exit-on-error", `--dbname=${restoredUrl}`, dump]);
  });

  it(
    "has the original go on past the backup, followed by a mirror",
    async () => {
      await post(`${sourceRegistry.url}/v1/entries`, accessToken, await publisher.entry("translate", "1.0.0"), 201);
      await checkpointOf(sourceRegistry.url, NAMES.length + 1);
      mirror = await mirrorDatabase();
      const mirrored = await runMirrorCli(sourceRegistry.url, ["--log-key", logKey(), "--once"], mirror!, MIRROR_MS);
      expect(mirrored.code, mirrored.stderr).toBe(0);
    },
    MIRROR_MS,
  );

  it("starts a registry that answers as the original did at the backup: entries, versions, feed, checkpoint, log key, token keys", async () => {
    restored = await openDatabase({ databaseUrl: restoredUrl, dataDir: "" });
    restoredRegistry = await startTestRegistry(restored, SETTINGS);
    for (const route of ROUTES) expect(await text(`${restoredRegistry.url}${route}`), route).toBe(before.get(route));
  });

  it(
    "is refused by the mirror that took a later checkpoint: the restored log is smaller than one its key signed",
    async () => {
      const refused = await runMirrorCli(restoredRegistry!.url, ["--log-key", logKey(), "--once"], mirror!, MIRROR_MS);
      expect(refused.code, refused.stderr).toBe(6);
      expect(refused.stderr).toContain(`shows a tree of ${NAMES.length} records, smaller than the ${NAMES.length + 1} it signed before`);
    },
    MIRROR_MS,
  );

  it("accepts the original's access tokens and root tokens, whose keys and hashes it restored", async () => {
    const url = restoredRegistry!.url;
    await post(`${url}/v1/entries`, accessToken, await publisher.entry("web-search", "1.1.0"), 201);
    const exchanged = await post(`${url}/v1/tokens`, rootToken, { scopes: SCOPES }, 200);
    expect(exchanged.accessToken).toMatch(/^ey/);
  });

  it("grows the restored log on from the backup's checkpoint, signed by the same key", async () => {
    const url = restoredRegistry!.url;
    await checkpointOf(url, NAMES.length + 1);
    const key = parseLogKey(logKey());
    const older = await verifyCheckpoint((JSON.parse(before.get("/v1/log/checkpoint")!) as { checkpoint: string }).checkpoint, key);
    const newer = await verifyCheckpoint(await text(`${url}/checkpoint`), key);
    const consistency = `${url}/v1/log/proofs/consistency?fromSize=${older.treeSize}&toSize=${newer.treeSize}`;
    const { proof } = JSON.parse(await text(consistency)) as { proof: string[] };
    verifyCheckpointsConsistent(older, newer, proof.map(fromBase64));
  });

  it(
    "is refused by the mirror once the restored log has grown back with other records: two trees of one size",
    async () => {
      const refused = await runMirrorCli(restoredRegistry!.url, ["--log-key", logKey(), "--once"], mirror!, MIRROR_MS);
      expect(refused.code, refused.stderr).toBe(6);
      expect(refused.stderr).toContain(`signed two different trees of ${NAMES.length + 1} records`);
    },
    MIRROR_MS,
  );
});

function fromBase64(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "base64"));
}
