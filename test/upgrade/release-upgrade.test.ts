import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistryClient, verifyEntrySignature, type EntrySigningFields, type RegistryClient } from "../../src/sdk/index.js";
import {
  parseLogKey,
  parseLogRecord,
  verifyCheckpoint,
  verifyCheckpointsConsistent,
  verifyEntryProof,
  type VerifiedCheckpoint,
} from "../../src/sdk/log-verifier.js";
import { migrateToLatest } from "../../src/storage/database.js";
import { migrationSource } from "../../src/storage/migrations/index.js";
import { mirrorDatabase, runMirrorCli, stateOf } from "../mirror/mirror-fixture.js";
import { childEnv, runCli } from "../support/child-processes.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { fixtureReleases, readReleaseFixture, type Json, type ReleaseFixture } from "./release-fixture.js";
import { restoreDump, type RestoredDatabase } from "./restored-database.js";

/**
 * An upgrade never rewrites history (CONTRACT-HISTORY.md section 10). For each old release in
 * test/fixtures/upgrade, its database is loaded and migrated by this build, and this build's
 * server must answer, prove and mirror everything that release wrote as that release did.
 */

/**
 * What an upgrade may add to the answers of an old release, each with the value every old entry
 * must then show. Record bytes have no such list: they never change.
 */
const OLD_ENTRY_MEMBERS = {
  payloadType: "registry.entry.v1",
  homepage: "",
  repository: "",
  license: "",
  deprecated: false,
  archived: false,
};
const ADDED_MEMBERS: Readonly<Record<"entry" | "version" | "change" | "changeEntry", Json>> = {
  /** An entry as resolve returns it: entries written before payload v2 were signed as v1, with v2's fields empty. */
  entry: OLD_ENTRY_MEMBERS,
  /** An item of a versions listing. */
  version: { deprecated: false, yanked: false },
  /** A change of the feed, beside its entry: protobuf JSON writes the (empty) list of a lifecycle record's versions. */
  change: { entries: [] },
  /** The entry a change carries: as resolve returns it (docs/feed.md), so usually as `entry`. */
  changeEntry: OLD_ENTRY_MEMBERS,
};

/**
 * The columns an upgrade added to `entries`, with what a row written before holds. The release's
 * log kept its entry states without them, and a mirror stores them with: both mean the same.
 */
const OLD_ROW_COLUMNS = {
  payload_type: "registry.entry.v1",
  homepage: "",
  repository: "",
  license: "",
  deprecation: null,
  yank: null,
  quarantine: null,
  removal: null,
  archive: null,
  deprecated: false,
  archived: false,
};

function withOldColumns(state: Awaited<ReturnType<typeof stateOf>>) {
  return { ...state, log: state.log.map((row) => ({ ...row, entry_state: { ...OLD_ROW_COLUMNS, ...(row.entry_state as object) } })) };
}

/** The kinds of the records an upgrade's migrations may append to the log (none: history is only read). */
const APPENDED_RECORD_KINDS: readonly string[] = [];
/** The kind a create is logged as after the upgrade. */
const CREATE_KIND = "entry.created";

const KNOWN_MIGRATIONS = (await migrationSource.getMigrations([])).map((migration) => migrationSource.getMigrationName(migration));

describe.each(fixtureReleases())("the database of release %s, upgraded", (release) => {
  const { fixture, sql } = readReleaseFixture(release);
  const pending = KNOWN_MIGRATIONS.filter((name) => !fixture.migrations.includes(name));
  const logKey = parseLogKey(fixture.logKey.verifierKey);
  const oldSize = Number(fixture.checkpoint.treeSize);
  let restored: RestoredDatabase;
  let migrationsBefore: Json[];
  let applied: string[];
  let registry: TestRegistry;
  let client: RegistryClient;

  beforeAll(async () => {
    restored = await restoreDump(sql);
    migrationsBefore = await migrationRows(restored);
    applied = await migrateToLatest(restored.database);
    registry = await startTestRegistry(restored.database, { logIntegrateMs: 50, logOrigin: fixture.logOrigin });
    client = createRegistryClient({ baseUrl: registry.url, transport: "connect" });
  });
  afterAll(async () => {
    client?.close();
    await registry?.close();
    await restored?.drop();
  });

  const get = async (path: string): Promise<Json> => {
    const response = await fetch(`${registry.url}${path}`);
    expect(response.status, `GET ${path}`).toBe(200);
    return (await response.json()) as Json;
  };

  it(`applies ${pending.length === 0 ? "no migration, since none came after it" : pending.join(", ")}, leaving the old ones as they were`, async () => {
    expect(migrationsBefore.map((row) => row.name)).toEqual(fixture.migrations);
    expect(applied).toEqual(pending);
    const after = await migrationRows(restored);
    expect(after.slice(0, migrationsBefore.length)).toEqual(migrationsBefore);
    expect(after.map((row) => row.name)).toEqual([...fixture.migrations, ...pending]);
  });

  it("resolves every old DID, bare or with a version, to the answer the release gave", async () => {
    for (const [did, answer] of Object.entries(fixture.entries)) {
      expect(await get(`/v1/entries/${encodeURIComponent(did)}`), did).toEqual(upgradedEntry(answer));
    }
  });

  it("lists every old name's versions as the release did", async () => {
    for (const [did, answer] of Object.entries(fixture.versions)) {
      const versions = (answer.versions as Json[]).map((item) => ({ ...item, ...ADDED_MEMBERS.version }));
      expect(await get(`/v1/entries/${encodeURIComponent(did)}/versions`), did).toEqual({ ...answer, versions });
    }
  });

  it("serves every old entry with its publisher's signature, which the SDK verifies", async () => {
    const served = await Promise.all(versionedDids(fixture).map((did) => get(`/v1/entries/${encodeURIComponent(did)}`)));
    for (const entry of served) {
      expect(await verifyEntrySignature(entry as EntrySigningFields, entry.signature), entry.entryDid).toBe(true);
    }
    // The check reads the served fields: one changed field fails it.
    const [first] = served;
    const altered = { ...first, description: `${first!.description}.` } as EntrySigningFields;
    expect(await verifyEntrySignature(altered, first!.signature)).toBe(false);
  });

  it("serves the old log as it was: its key, its checkpoint extended, every record's bytes and tiles, the feed", async () => {
    expect(await get("/v1/log/key")).toEqual(fixture.logKey);
    const old = await verifyCheckpoint(fixture.checkpoint.checkpoint, logKey);
    const current = await currentCheckpoint();
    await expectConsistent(old, current);

    for (const { index, record } of fixture.records) {
      const answer = await get(`/v1/log/proofs/inclusion?index=${index}&treeSize=${current.treeSize}`);
      expect(answer.record, `record ${index}`).toBe(record);
      const bytes = fromBase64(record);
      await verifyEntryProof(parseLogRecord(bytes).entry?.entryDid ?? "", { ...inclusion(answer), checkpoint: current.note }, logKey);
    }
    for (const [path, bytes] of Object.entries(fixture.tiles)) {
      const response = await fetch(`${registry.url}/${path}`);
      expect(Buffer.from(await response.arrayBuffer()).toString("base64"), path).toBe(bytes);
    }

    const changes = await feed(current.treeSize);
    expect(changes.slice(0, oldSize)).toEqual(fixture.changes.map(upgradedChange));
    const unexpected = changes.slice(oldSize).filter((change) => !APPENDED_RECORD_KINDS.includes(change.kind));
    expect(unexpected, "records the upgrade appended").toEqual([]);
  });

  it("proves every old entry's current state from the log with the release's pinned key", async () => {
    for (const did of versionedDids(fixture)) {
      const proved = await client.proveEntry(did, { logKey: fixture.logKey.verifierKey });
      expect(proved.pinned).toBe(true);
      expect(Number(proved.record.index), did).toBe(lastRecordAbout(fixture, did));
      expect(proved.record.entry).toMatchObject({ entryDid: did, signature: fixture.entries[did]!.signature });
    }
  });

  it("passes `registry verify` for a sample of old entries", async () => {
    const sample = verifySample(fixture);
    const results = await Promise.all(
      sample.map((did) =>
        runCli(["verify", did, "--log-key", fixture.logKey.verifierKey, "--json"], childEnv({ REGISTRY_URL: registry.url })),
      ),
    );
    for (const [i, result] of results.entries()) {
      expect(result.code, `${sample[i]}: ${result.stderr}`).toBe(0);
      const verified = JSON.parse(result.stdout) as Json;
      expect(verified).toMatchObject({ verified: true, pinned: true, verifierKey: fixture.logKey.verifierKey });
      expect(Number(verified.index), sample[i]).toBe(lastRecordAbout(fixture, verified.entryDid));
    }
  });

  it("creates a new entry at the log's next index, in a checkpoint that extends the release's", async () => {
    const sizeBefore = Number((await get("/v1/changes?limit=1")).size);
    const publisher = await createPublisher();
    const token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
    const response = await fetch(`${registry.url}/v1/entries`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(await publisher.entry("made-after-the-upgrade", "1.0.0")),
    });
    expect(response.status, await response.text()).toBe(201);

    const current = await currentCheckpoint(sizeBefore + 1);
    const proved = await client.proveEntry("did:reg:main:skill:made-after-the-upgrade@1.0.0", { logKey: fixture.logKey.verifierKey });
    expect(proved.record).toMatchObject({ index: String(sizeBefore), kind: CREATE_KIND });
    await expectConsistent(await verifyCheckpoint(fixture.checkpoint.checkpoint, logKey), current);
  });

  it("mirrors through `registry mirror`, which verifies the whole log against the release's key", async () => {
    const mirror = await mirrorDatabase();
    try {
      const current = await currentCheckpoint();
      const result = await runMirrorCli(registry.url, ["--log-key", fixture.logKey.verifierKey, "--once", "--json"], mirror);
      expect(result.code, result.stderr).toBe(0);
      const lastStep = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as Json;
      expect(lastStep).toMatchObject({ to: current.treeSize, origin: fixture.logOrigin });
      const opened = await mirror.open();
      try {
        expect(withOldColumns(await stateOf(opened.knex))).toEqual(withOldColumns(await stateOf(restored.database.knex)));
      } finally {
        await opened.close();
      }
    } finally {
      await mirror.remove();
    }
  });

  /** The latest checkpoint, verified with the release's key, once it covers at least `size` records. */
  async function currentCheckpoint(size = 0): Promise<VerifiedCheckpoint> {
    for (let attempt = 0; attempt < 400; attempt++) {
      const checkpoint = await verifyCheckpoint((await get("/v1/log/checkpoint")).checkpoint, logKey);
      if (checkpoint.treeSize >= size) return checkpoint;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`no checkpoint covered ${size} records`);
  }

  async function expectConsistent(old: VerifiedCheckpoint, current: VerifiedCheckpoint): Promise<void> {
    const answer = await get(`/v1/log/proofs/consistency?fromSize=${old.treeSize}&toSize=${current.treeSize}`);
    verifyCheckpointsConsistent(old, current, ((answer.proof ?? []) as string[]).map(fromBase64));
  }

  /** The first `size` changes of the feed, page by page. */
  async function feed(size: number): Promise<Json[]> {
    const changes: Json[] = [];
    while (changes.length < size) {
      const after = changes.length === 0 ? "" : `&after=${changes.at(-1)!.index}`;
      changes.push(...((await get(`/v1/changes?limit=1000${after}`)).changes as Json[]));
    }
    return changes.slice(0, size);
  }
});

/** An old answer as the upgraded server must give it: every old member, and the added ones with their old-entry values. */
function upgradedEntry(answer: Json): Json {
  return { ...answer, ...ADDED_MEMBERS.entry };
}

function upgradedChange(change: Json): Json {
  return { ...change, ...ADDED_MEMBERS.change, entry: { ...change.entry, ...ADDED_MEMBERS.changeEntry } };
}

async function migrationRows(restored: RestoredDatabase): Promise<Json[]> {
  return restored.database.knex("knex_migrations").orderBy("id").select("*");
}

function versionedDids(fixture: ReleaseFixture): string[] {
  return Object.keys(fixture.entries).filter((did) => did.includes("@"));
}

function recordsOf(fixture: ReleaseFixture) {
  return fixture.records.map(({ record }) => parseLogRecord(fromBase64(record)));
}

/** The index of the last record the release logged about a version: the one its proof is of. */
function lastRecordAbout(fixture: ReleaseFixture, did: string): number {
  return Number(recordsOf(fixture).findLast((record) => record.entry?.entryDid === did)!.index);
}

/**
 * Two DIDs for the CLI, since each run is a process: the first record's version, and the name of
 * the last record, bare, so the latest version is proved as well.
 */
function verifySample(fixture: ReleaseFixture): string[] {
  const records = recordsOf(fixture);
  return [String(records[0]!.entry?.entryDid), String(records.at(-1)!.entry?.entryDid).replace(/@.*$/, "")];
}

function inclusion(answer: Json) {
  return {
    index: Number(answer.index),
    record: fromBase64(answer.record),
    proof: ((answer.proof ?? []) as string[]).map(fromBase64),
    treeSize: Number(answer.treeSize),
  };
}

function fromBase64(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "base64"));
}
