import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { EntryRepository, StoredEntry } from "../../src/entries/entry-repository.js";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { createCachedEntryRepository, type ChangeFeed } from "../../src/storage/entry-cache.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { registryClient } from "../support/protocol-clients.js";
import { createTestDatabase, usesPostgres, type TestDatabase } from "../support/test-database.js";

/** A feed the test drives by hand. */
function manualFeed(): ChangeFeed & { change(did: string): void; live: boolean } {
  let listener: Parameters<ChangeFeed["subscribe"]>[0] | undefined;
  return {
    live: true,
    subscribe: (l) => void (listener = l),
    change: (did) => listener?.onChange(did),
  };
}

/** An entry repository whose reads are counted and can be held open, to stage races. */
function countingRepository(answer: () => StoredEntry | undefined) {
  let reads = 0;
  let gate: Promise<void> = Promise.resolve();
  const repository = {
    findLatest: async () => {
      reads++;
      const value = answer();
      await gate;
      return value;
    },
  } as unknown as EntryRepository;
  return {
    repository,
    reads: () => reads,
    hold(): () => void {
      let open!: () => void;
      gate = new Promise((resolve) => (open = resolve));
      return () => open();
    },
  };
}

const entry = (version: string) => ({ version, description: "", tags: [], data: {} }) as unknown as StoredEntry;

describe("the entry cache", () => {
  it("serves repeated resolves from memory until the entry changes", async () => {
    const feed = manualFeed();
    const inner = countingRepository(() => entry("1.0.0"));
    const cache = createCachedEntryRepository(inner.repository, feed);
    await cache.findLatest("did:reg:main:skill:a");
    await cache.findLatest("did:reg:main:skill:a");
    expect(inner.reads()).toBe(1);
    feed.change("did:reg:main:skill:a");
    await cache.findLatest("did:reg:main:skill:a");
    expect(inner.reads()).toBe(2);
  });

  it("shares what it keeps frozen: a change by one reader throws instead of reaching the next", async () => {
    const feed = manualFeed();
    const inner = countingRepository(
      () => ({ version: "1.0.0", description: "", tags: ["a"], data: { nested: { n: 1 } } }) as unknown as StoredEntry,
    );
    const cache = createCachedEntryRepository(inner.repository, feed);
    const first = (await cache.findLatest("did:reg:main:skill:a")) as unknown as Record<string, any>;
    const second = (await cache.findLatest("did:reg:main:skill:a")) as unknown as Record<string, any>;
    expect(second).toBe(first);
    expect(() => void (first.version = "9.9.9")).toThrow(TypeError);
    expect(() => void first.tags.push("b")).toThrow(TypeError);
    expect(() => void (first.data.nested.n = 2)).toThrow(TypeError);
    expect(second).toMatchObject({ version: "1.0.0", tags: ["a"], data: { nested: { n: 1 } } });
  });

  it("does not keep an answer read while a change arrived", async () => {
    const feed = manualFeed();
    let current = "1.0.0";
    const inner = countingRepository(() => entry(current));
    const cache = createCachedEntryRepository(inner.repository, feed);
    const release = inner.hold();
    const stale = cache.findLatest("did:reg:main:skill:a");
    // The write commits and is announced while the read is still in flight.
    current = "2.0.0";
    feed.change("did:reg:main:skill:a");
    release();
    expect((await stale)?.version).toBe("1.0.0");
    expect((await cache.findLatest("did:reg:main:skill:a"))?.version).toBe("2.0.0");
    expect(inner.reads()).toBe(2);
  });

  it("caches nothing while the feed is down", async () => {
    const feed = manualFeed();
    feed.live = false;
    const inner = countingRepository(() => entry("1.0.0"));
    const cache = createCachedEntryRepository(inner.repository, feed);
    await cache.findLatest("did:reg:main:skill:a");
    await cache.findLatest("did:reg:main:skill:a");
    expect(inner.reads()).toBe(2);
  });

  it("expires answers after the TTL and evicts the least recently used", async () => {
    let clock = 0;
    const inner = countingRepository(() => entry("1.0.0"));
    const cache = createCachedEntryRepository(inner.repository, manualFeed(), { ttlMs: 1000, maxEntries: 2, now: () => clock });
    await cache.findLatest("a");
    clock = 1001;
    await cache.findLatest("a");
    expect(inner.reads()).toBe(2);
    await cache.findLatest("b");
    await cache.findLatest("a");
    await cache.findLatest("c");
    expect(cache.size).toBe(2);
    await cache.findLatest("b");
    expect(inner.reads()).toBe(5);
  });
});

describe.skipIf(!usesPostgres())("two registry processes on one Postgres", () => {
  let db: TestDatabase;
  let second: Database;
  let writer: TestRegistry;
  let reader: TestRegistry;

  beforeAll(async () => {
    db = await createTestDatabase();
    second = await openDatabase({ databaseUrl: db.url, dataDir: "" });
    writer = await startTestRegistry(db.database);
    reader = await startTestRegistry(second);
  });
  afterAll(async () => {
    await reader?.close();
    await writer?.close();
    await second?.close();
    await db?.drop();
  });

  async function eventually(check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 5_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error("the reader never saw the change");
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it("shows another process's publish and revoke on the next resolves", async () => {
    const publisher = await createPublisher();
    const token = await writer.accessToken(publisher.did, ["registry.publish.skill"]);
    const write = registryClient("rest", writer.url);
    const read = registryClient("rest", reader.url);
    const base = "did:reg:main:skill:shared-cache";
    expect((await write.create(await publisher.entry("shared-cache", "1.0.0"), token)).code).toBe("ok");
    expect((await read.resolve(base)).body.version).toBe("1.0.0");
    expect((await read.versions(base)).body.versions).toHaveLength(1);

    expect((await write.create(await publisher.entry("shared-cache", "1.1.0"), token)).code).toBe("ok");
    await eventually(async () => (await read.resolve(base)).body.version === "1.1.0");
    await eventually(async () => (await read.versions(base)).body.versions.length === 2);

    const did = `${base}@1.1.0`;
    expect((await write.revoke(did, await publisher.revocation(did, "broken"), token)).code).toBe("ok");
    await eventually(async () => (await read.resolve(did)).body.status === "revoked");
    expect((await read.resolve(base)).body.version).toBe("1.0.0");
  });

  it("recovers when the server drops its listening connection", async () => {
    const publisher = await createPublisher();
    const token = await writer.accessToken(publisher.did, ["registry.publish.skill"]);
    const write = registryClient("rest", writer.url);
    const read = registryClient("rest", reader.url);
    const base = "did:reg:main:skill:feed-recovery";
    await write.create(await publisher.entry("feed-recovery", "1.0.0"), token);
    expect((await read.resolve(base)).body.version).toBe("1.0.0");

    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    const killed = await admin.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'registry-changes' and datname = current_database()",
    );
    await admin.end();
    expect(killed.rowCount).toBe(2);

    await write.create(await publisher.entry("feed-recovery", "2.0.0"), token);
    await eventually(async () => (await read.resolve(base)).body.version === "2.0.0");
    await write.create(await publisher.entry("feed-recovery", "3.0.0"), token);
    await eventually(async () => (await read.resolve(base)).body.version === "3.0.0");
  });
});

describe("the entry cache's memory bound", () => {
  const sized = (version: string, dataBytes: number) =>
    ({ version, description: "", tags: [], data: { blob: "x".repeat(dataBytes) } }) as unknown as StoredEntry;

  it("evicts the least recently used names to stay under its byte budget", async () => {
    const inner = countingRepository(() => sized("1.0.0", 30_000));
    const cache = createCachedEntryRepository(inner.repository, manualFeed(), { maxBytes: 200_000 });
    for (let index = 0; index < 10; index++) await cache.findLatest(`did:reg:main:skill:big-${index}`);
    // Each answer is estimated at about 61 KB (two bytes a character), so three fit.
    expect(cache.size).toBe(3);
    expect(cache.bytes).toBeLessThanOrEqual(200_000);
    await cache.findLatest("did:reg:main:skill:big-9");
    expect(inner.reads()).toBe(10);
    await cache.findLatest("did:reg:main:skill:big-0");
    expect(inner.reads()).toBe(11);
  });

  it("gives the bytes back when an entry changes", async () => {
    const feed = manualFeed();
    const cache = createCachedEntryRepository(countingRepository(() => sized("1.0.0", 1_000)).repository, feed);
    await cache.findLatest("did:reg:main:skill:a");
    expect(cache.bytes).toBeGreaterThan(2_000);
    feed.change("did:reg:main:skill:a");
    expect(cache.bytes).toBe(0);
    expect(cache.size).toBe(0);
  });
});
