/**
 * Writes the upgrade test's fixture of the release checked out here (test/fixtures/upgrade/README.md):
 *
 *   node bin/run-ts.js test/upgrade/make-release-fixture.ts
 *
 * On a scratch database of the Postgres server in FIXTURE_POSTGRES_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres; the database is created and dropped here), it
 * migrates with this checkout's code, starts this checkout's server, writes a varied history
 * through its REST API, and waits until a signed checkpoint covers every record. It then writes
 * test/fixtures/upgrade/<commit>.json (what the server answered) and <commit>.sql (pg_dump of the
 * whole database). Run it at a release's commit, with src/ unchanged: the name claims that commit made it.
 * Needs pg_dump of the server's major version or newer.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { entryBundlePath, tilePath, tileWidth } from "../../src/transparency/tiles.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { withAdmin } from "../support/test-database.js";
import { FIXTURE_DIRECTORY, type Json, type ReleaseFixture } from "./release-fixture.js";

/** The origin the fixture's log signs as; the upgrade test starts its server with the same. */
const LOG_ORIGIN = "upgrade-fixture.test/log";
const ADMIN_URL = process.env.FIXTURE_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const PUBLISH_SCOPES = ["registry.publish.skill", "registry.publish.agent"];

async function main(): Promise<void> {
  const release = committedRelease();
  const name = `registry_release_fixture_${randomBytes(4).toString("hex")}`;
  await withAdmin(ADMIN_URL, (client) => client.query(`create database ${name}`));
  try {
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    const fixture = await recordRelease(url.toString(), release);
    const sql = dumpDatabase(url.toString());
    writeFileSync(`${FIXTURE_DIRECTORY}${release}.sql`, sql);
    const json = `${FIXTURE_DIRECTORY}${release}.json`;
    writeFileSync(json, `${JSON.stringify(fixture, null, 2)}\n`);
    // In the layout `npm run lint` checks JSON files for (short arrays on one line).
    execFileSync("npx", ["biome", "format", "--write", json], { stdio: "inherit" });
    console.log(
      `wrote ${FIXTURE_DIRECTORY}${release}.{sql,json}: ${fixture.records.length} log records, ${Buffer.byteLength(sql)} bytes of SQL`,
    );
  } finally {
    await withAdmin(ADMIN_URL, (client) => client.query(`drop database if exists ${name} with (force)`));
  }
}

/** HEAD's short commit; refused when src/ differs from it, since the fixture would then be of no release. */
function committedRelease(): string {
  const changed = execFileSync("git", ["status", "--porcelain", "--", "src"], { encoding: "utf8" }).trim();
  if (changed !== "") throw new Error(`src/ has uncommitted changes; a fixture is made at a release's commit:\n${changed}`);
  return execFileSync("git", ["rev-parse", "--short=7", "HEAD"], { encoding: "utf8" }).trim();
}

async function recordRelease(databaseUrl: string, release: string): Promise<ReleaseFixture> {
  const database = await openDatabase({ databaseUrl, dataDir: "" });
  try {
    await migrateToLatest(database);
    const registry = await startTestRegistry(database, { logIntegrateMs: 50, logOrigin: LOG_ORIGIN });
    try {
      const names = await writeHistory(registry);
      const size = await checkpointCoversLog(registry.url);
      return await recordAnswers(registry.url, database, { release, names, size });
    } finally {
      await registry.close();
    }
  } finally {
    await database.close();
  }
}

/** Writes the history through REST, as clients do; returns the bare DIDs written. */
async function writeHistory(registry: TestRegistry): Promise<string[]> {
  const alice = await createPublisher("skill");
  const bob = await createPublisher("agent");
  const tokens = new Map([
    [alice, await registry.accessToken(alice.did, PUBLISH_SCOPES)],
    [bob, await registry.accessToken(bob.did, PUBLISH_SCOPES)],
  ]);
  const publish = async (publisher: TestPublisher, name: string, version: string, fields: Json = {}) =>
    send(registry.url, "POST", "/v1/entries", tokens.get(publisher)!, await publisher.entry(name, version, fields));
  const revoke = async (publisher: TestPublisher, did: string, reason: string) =>
    send(registry.url, "DELETE", `/v1/entries/${encodeURIComponent(did)}`, tokens.get(publisher)!, await publisher.revocation(did, reason));

  await publish(alice, "web-search", "1.0.0");
  await publish(alice, "web-search", "1.1.0", {
    description: "Searches the web — schnell, 速い, 🚀",
    tags: ["search", "web", "i18n"],
    data: {
      license: "Apache-2.0",
      runtime: { node: ">=20", flags: ["--fast", "--ünïcode"], limits: { rps: 10, ratio: 0.5, burst: null, strict: true } },
      locales: ["de-DE", "ja-JP"],
      emoji: "🔍",
    },
    bondAmount: "250.50 USDC",
  });
  await publish(alice, "web-search", "2.0.0-beta.1", { tags: [] });
  await publish(alice, "web-search", "2.0.0", { publishedAt: pastInstant(3_000, true) });
  await publish(alice, "bare-minimum", "0.1.0", { description: "", tags: [], data: {}, bondAmount: "" });
  for (const version of ["1.0.0", "1.1.0-rc.1", "1.1.0"]) await publish(alice, "retired", version, { data: { generation: version } });
  await publish(alice, "travel-planner", "1.0.0", {
    entryType: "agent",
    description: "Plans trips: Zürich → 東京",
    data: { tools: [{ name: "flights", params: { cabin: ["economy", "business"] } }], maxLegs: 4 },
    publishedAt: pastInstant(2_000, false),
  });
  await publish(alice, "travel-planner", "1.1.0-alpha.2", { entryType: "agent", bondAmount: "0.001 ETH" });
  await publish(bob, "summarizer", "3.2.1", { data: { model: { family: "tiny", context: 8192 } } });
  // 3.10.0 is above 3.2.1 by precedence and below it as text.
  await publish(bob, "summarizer", "3.10.0");

  await revoke(alice, "did:reg:main:skill:web-search@1.1.0", "a vulnerable dependency");
  await revoke(alice, "did:reg:main:skill:retired", "no longer maintained");
  return [
    "did:reg:main:skill:web-search",
    "did:reg:main:skill:bare-minimum",
    "did:reg:main:skill:retired",
    "did:reg:main:agent:travel-planner",
    "did:reg:main:agent:summarizer",
  ];
}

/** A past instant with milliseconds, as `Z` or as `+00:00`: the registry signs and stores both as toISOString writes them. */
function pastInstant(agoMs: number, withZ: boolean): string {
  const text = new Date(Date.now() - agoMs).toISOString();
  return withZ ? text : text.replace("Z", "+00:00");
}

async function send(base: string, method: string, path: string, token: string, body: unknown): Promise<void> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const expected = method === "POST" ? 201 : 200;
  if (response.status !== expected) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
}

/** Waits until the latest signed checkpoint covers every record of the change log; returns its size. */
async function checkpointCoversLog(base: string): Promise<number> {
  const size = Number((await getJson(base, "/v1/changes?limit=1")).size);
  for (let attempt = 0; attempt < 400; attempt++) {
    if (Number((await getJson(base, "/v1/log/checkpoint")).treeSize) === size) return size;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no checkpoint covered the log's ${size} records`);
}

async function recordAnswers(
  base: string,
  database: Database,
  written: { release: string; names: readonly string[]; size: number },
): Promise<ReleaseFixture> {
  const versions: Record<string, Json> = {};
  const entries: Record<string, Json> = {};
  for (const did of written.names) {
    versions[did] = await getJson(base, `/v1/entries/${encodeURIComponent(did)}/versions`);
    entries[did] = await getJson(base, `/v1/entries/${encodeURIComponent(did)}`);
    for (const item of versions[did].versions as Json[]) {
      entries[item.entryDid] = await getJson(base, `/v1/entries/${encodeURIComponent(item.entryDid)}`);
    }
  }
  const migrations = await database.knex("knex_migrations").orderBy("id").pluck("name");
  return {
    release: written.release,
    generatedAt: new Date().toISOString(),
    logOrigin: LOG_ORIGIN,
    migrations,
    logKey: (await getJson(base, "/v1/log/key")) as ReleaseFixture["logKey"],
    checkpoint: (await getJson(base, "/v1/log/checkpoint")) as ReleaseFixture["checkpoint"],
    entries,
    versions,
    records: await logRecords(base, written.size),
    tiles: await levelZeroTiles(base, written.size),
    changes: await changes(base),
  };
}

async function logRecords(base: string, size: number): Promise<ReleaseFixture["records"]> {
  const records: Array<ReleaseFixture["records"][number]> = [];
  for (let index = 0; index < size; index++) {
    const answer = await getJson(base, `/v1/log/proofs/inclusion?index=${index}&treeSize=${size}`);
    const leaf = Buffer.concat([Buffer.from([0]), Buffer.from(answer.record, "base64")]);
    records.push({ index, record: answer.record, leafHash: createHash("sha256").update(leaf).digest("hex") });
  }
  return records;
}

/** The leaf hash tiles and entry bundles of the tree, as tlog-tiles clients read them. */
async function levelZeroTiles(base: string, size: number): Promise<Record<string, string>> {
  const tiles: Record<string, string> = {};
  for (let index = 0; tileWidth(0, index, size) > 0; index++) {
    const width = tileWidth(0, index, size);
    for (const path of [tilePath({ level: 0, index, width }), entryBundlePath(index, width)]) {
      const response = await fetch(`${base}/${path}`);
      if (response.status !== 200) throw new Error(`GET /${path}: ${response.status}`);
      tiles[path] = Buffer.from(await response.arrayBuffer()).toString("base64");
    }
  }
  return tiles;
}

async function changes(base: string): Promise<Json[]> {
  const all: Json[] = [];
  for (;;) {
    const after = all.length === 0 ? "" : `&after=${all.at(-1)!.index}`;
    const page = await getJson(base, `/v1/changes?limit=1000${after}`);
    all.push(...(page.changes as Json[]));
    if (all.length >= Number(page.size)) return all;
  }
}

async function getJson(base: string, path: string): Promise<Json> {
  const response = await fetch(`${base}${path}`);
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Json;
}

/**
 * The whole database as plain SQL that Postgres (psql, or one multi-statement query) and PGlite
 * (`exec`) both load: INSERTs, since PGlite cannot read COPY FROM stdin; no owners or grants, since
 * the loading role is whoever runs the test.
 */
function dumpDatabase(databaseUrl: string): string {
  const sql = execFileSync("pg_dump", ["--inserts", "--no-owner", "--no-privileges", "--dbname", databaseUrl], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  return withoutPsqlMetaCommands(sql);
}

/**
 * Recent pg_dump releases (15.14, 16.10, 17.6 and later) wrap the dump in `\restrict <random key>`
 * and `\unrestrict`, psql meta-commands that neither the server nor PGlite understands; they only
 * guard psql against a hostile dump. They are removed, and any other meta-command is refused.
 */
function withoutPsqlMetaCommands(sql: string): string {
  const lines = sql.split("\n").filter((line) => !/^\\(un)?restrict /.test(line));
  const other = lines.find((line) => line.startsWith("\\"));
  if (other !== undefined) throw new Error(`pg_dump wrote a psql meta-command that only psql can run: ${other}`);
  return lines.join("\n");
}

await main();
