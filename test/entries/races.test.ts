import { prerelease, rsort } from "semver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTOCOLS, registryClient, type CallResult, type Protocol } from "../support/protocol-clients.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, usesPostgres, type TestDatabase } from "../support/test-database.js";

/**
 * Concurrent writes. On PGlite the database has one connection, so the writes are serialised
 * there; on Postgres (DATABASE_URL) they really run in parallel. The assertions hold for both.
 */

let db: TestDatabase;
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  publisher = await createPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill"], 3600);
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

const baseOf = (name: string) => `did:reg:main:skill:${name}`;

async function count(sql: string, bindings: readonly string[]): Promise<number> {
  const result = await db.database.knex.raw(`select count(*)::int as n from (${sql}) counted`, [...bindings]);
  return result.rows[0].n as number;
}

const latestCount = (baseDid: string) => count("select 1 from entries where base_did = ? and is_latest", [baseDid]);

/** The version the contract calls latest among `versions` (all active): the highest stable, else the highest. */
function bestOf(versions: readonly string[]): string {
  const stable = versions.filter((v) => prerelease(v) === null);
  return rsort([...(stable.length > 0 ? stable : versions)])[0]!;
}

function shuffle<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

function tally(results: readonly CallResult[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of results) counts[r.code] = (counts[r.code] ?? 0) + 1;
  return counts;
}

describe("concurrent creates of one name@version", () => {
  it.each<[Protocol, string]>([
    ["rest", "race-same-rest"],
    ["grpc", "race-same-grpc"],
  ])("over %s: exactly one succeeds, the other 19 are already_exists, one row is stored", async (protocol, name) => {
    const entry = await publisher.entry(name, "1.0.0");
    const clients = Array.from({ length: 20 }, () => registryClient(protocol, registry.url));
    const results = await Promise.all(clients.map((client) => client.create(entry, token)));
    for (const client of clients) client.close();

    expect(tally(results)).toEqual({ ok: 1, already_exists: 19 });
    if (protocol === "rest") {
      expect(results.map((r) => r.httpStatus).sort()).toEqual([201, ...Array(19).fill(409)]);
    }
    const winner = results.find((r) => r.code === "ok")!;
    expect(winner.body).toMatchObject({ entryDid: entry.entryDid, isLatest: true, status: "active" });
    for (const loser of results.filter((r) => r.code === "already_exists")) {
      // grpc-js decodes grpc-message with decodeURI, which leaves %3A and %40 encoded.
      expect(decodeURIComponent(loser.message)).toContain(entry.entryDid);
    }

    expect(await count("select 1 from entries where entry_did = ?", [entry.entryDid])).toBe(1);
    expect(await count("select 1 from entry_names where base_did = ?", [baseOf(name)])).toBe(1);
    const reader = registryClient("rest", registry.url);
    const versions = await reader.versions(baseOf(name));
    expect(versions.body.versions).toHaveLength(1);
    expect(versions.body.versions[0].sequence).toBe(winner.body.sequence);
  });
});

describe("concurrent creates of different versions of one name", () => {
  const name = "race-versions";
  const base = baseOf(name);
  // Chosen so that text order and SemVer precedence disagree, with prereleases above the best stable.
  const STABLE = [
    "0.0.1",
    "0.1.0",
    "0.9.0",
    "0.10.0",
    "1.0.0",
    "1.0.1",
    "1.2.3",
    "1.9.9",
    "1.10.0",
    "2.0.0",
    "2.1.0",
    "2.9.0",
    "2.10.0",
    "3.0.0",
    "4.5.6",
    "5.0.0",
    "7.0.0",
    "9.9.9",
    "9.99.99",
    "10.0.0",
  ];
  const PRERELEASE = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-beta.11",
    "1.0.0-beta.2",
    "2.0.0-rc.1",
    "10.0.0-rc.1",
    "10.0.1-alpha",
    "11.0.0-rc.1",
    "20.0.0-beta.2",
    "100.0.0-0",
  ];
  const ALL = [...STABLE, ...PRERELEASE];
  const results = new Map<string, CallResult>();
  /** What concurrent readers saw while the writes ran: one statement each. */
  const snapshots: Array<Array<{ sequence: string; version: string; is_latest: boolean }>> = [];

  beforeAll(async () => {
    expect(ALL).toHaveLength(30);
    const entries = await Promise.all(shuffle(ALL).map((version) => publisher.entry(name, version)));
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const rows = await db.database.knex("entries").select("sequence", "version", "is_latest").where({ base_did: base });
        snapshots.push(rows);
        // PGlite answers in-process without I/O: without a macrotask break this loop would
        // starve the server's sockets.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    try {
      await Promise.all(
        entries.map(async (entry, index) => {
          const client = registryClient(PROTOCOLS[index % PROTOCOLS.length]!, registry.url);
          results.set(entry.version, await client.create(entry, token));
          client.close();
        }),
      );
    } finally {
      writing = false;
      await reader;
    }
  });

  it("accepts every version", () => {
    expect([...results.values()].map((r) => `${r.code} ${r.message}`)).toEqual(Array(30).fill("ok "));
  });

  it("leaves exactly one latest, the highest stable version (SQL)", async () => {
    expect(await latestCount(base)).toBe(1);
    const [row] = await db.database.knex("entries").select("version").where({ base_did: base, is_latest: true });
    expect(row.version).toBe("10.0.0");
    expect(bestOf(ALL)).toBe("10.0.0");
  });

  it("resolves the name to it, and exactly one version says isLatest", async () => {
    const client = registryClient("rest", registry.url);
    const latest = await client.resolve(base);
    expect(latest.body).toMatchObject({ version: "10.0.0", isLatest: true });
    const resolved = await Promise.all(ALL.map((version) => client.resolve(`${base}@${version}`)));
    expect(resolved.filter((r) => r.body.isLatest).map((r) => r.body.version)).toEqual(["10.0.0"]);
  });

  it("lists all 30 versions in precedence order", async () => {
    const client = registryClient("rest", registry.url);
    const listed = await client.versions(base);
    expect(listed.body.versions.map((v: { version: string }) => v.version)).toEqual(rsort([...ALL]));
  });

  it("gives unique sequences that increase in commit order", async () => {
    const sequences = [...results.values()].map((r) => BigInt(r.body.sequence));
    expect(new Set(sequences).size).toBe(30);
    const final = [...sequences].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String);
    // Writes commit one after another; any reader snapshot shows a prefix of the final sequence
    // order. A sequence drawn before the name's lock, or committed out of order, shows as a gap.
    expect(snapshots.length).toBeGreaterThan(0);
    for (const snapshot of snapshots) {
      const seen = snapshot.map((row) => String(row.sequence)).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
      expect(seen).toEqual(final.slice(0, seen.length));
    }
  });

  it("never showed a reader zero or two latest versions, nor the wrong one", () => {
    const seenSomething = snapshots.filter((s) => s.length > 0);
    if (usesPostgres()) expect(seenSomething.length).toBeGreaterThan(0);
    for (const snapshot of seenSomething) {
      const latest = snapshot.filter((row) => row.is_latest).map((row) => row.version);
      expect(latest).toEqual([bestOf(snapshot.map((row) => row.version))]);
    }
  });
});

describe("concurrent creates on different names", () => {
  it("all succeed: 12 names with 3 versions each, at once", async () => {
    const names = Array.from({ length: 12 }, (_, i) => `race-names-${i}`);
    const versions = ["1.0.0", "1.1.0-rc.1", "0.9.0"];
    const entries = await Promise.all(names.flatMap((name) => versions.map((version) => publisher.entry(name, version))));
    const results = await Promise.all(
      shuffle(entries).map(async (entry, index) => {
        const client = registryClient(PROTOCOLS[index % PROTOCOLS.length]!, registry.url);
        const result = await client.create(entry, token);
        client.close();
        return result;
      }),
    );
    expect(results.map((r) => `${r.code} ${r.message}`)).toEqual(Array(36).fill("ok "));
    expect(new Set(results.map((r) => r.body.sequence)).size).toBe(36);
    const reader = registryClient("rest", registry.url);
    for (const name of names) {
      expect(await latestCount(baseOf(name))).toBe(1);
      expect((await reader.resolve(baseOf(name))).body).toMatchObject({ version: "1.0.0", isLatest: true });
    }
  });

  it("gives a new name to exactly one of several publishers racing for it", async () => {
    const name = "race-claimed";
    const rivals = await Promise.all(Array.from({ length: 8 }, () => createPublisher()));
    const attempts = await Promise.all(
      rivals.map(async (rival, index) => ({
        rival,
        entry: await rival.entry(name, `1.0.${index}`),
        token: await registry.accessToken(rival.did, ["registry.publish.skill"]),
      })),
    );
    const results = await Promise.all(
      attempts.map(async ({ entry, token: rivalToken }, index) => {
        const client = registryClient(PROTOCOLS[index % PROTOCOLS.length]!, registry.url);
        const result = await client.create(entry, rivalToken);
        client.close();
        return result;
      }),
    );
    expect(tally(results)).toEqual({ ok: 1, permission_denied: 7 });
    const winner = attempts[results.findIndex((r) => r.code === "ok")]!;
    const owner = await db.database
      .knex("entry_names")
      .select("publisher_did")
      .where({ base_did: baseOf(name) })
      .first();
    expect(owner.publisher_did).toBe(winner.rival.did);
    expect(await count("select 1 from entries where base_did = ?", [baseOf(name)])).toBe(1);
  });
});

describe("concurrent revoke-all and create on one name", () => {
  /**
   * Either order is valid; the outcome must match the order the revoke response reveals, and
   * exactly one version is latest afterwards.
   */
  async function race(name: string, newVersion: string) {
    const base = baseOf(name);
    const seeder = registryClient("rest", registry.url);
    for (const version of ["1.0.0", "1.1.0"]) {
      expect((await seeder.create(await publisher.entry(name, version), token)).code).toBe("ok");
    }
    const entry = await publisher.entry(name, newVersion);
    const revocation = await publisher.revocation(base, "withdrawn");
    const creator = registryClient("grpc", registry.url);
    const revoker = registryClient("rest", registry.url);
    const [created, revoked] = await Promise.all([creator.create(entry, token), revoker.revoke(base, revocation, token)]);
    creator.close();
    expect(created.code, created.message).toBe("ok");
    expect(revoked.code, revoked.message).toBe("ok");
    const revokedVersions = revoked.body.entries.map((e: { version: string }) => e.version);
    const createdFirst = revokedVersions.includes(newVersion);
    expect(revokedVersions).toEqual(rsort(createdFirst ? ["1.0.0", "1.1.0", newVersion] : ["1.0.0", "1.1.0"]));
    for (const e of revoked.body.entries) expect(e).toMatchObject({ status: "revoked", revocationReason: "withdrawn" });

    expect(await latestCount(base)).toBe(1);
    const fresh = await seeder.resolve(`${base}@${newVersion}`);
    expect(fresh.body.status).toBe(createdFirst ? "revoked" : "active");
    // Created first: every version is revoked, so the highest revoked one is latest. Otherwise the
    // new version is the only active one.
    const expectedLatest = createdFirst ? rsort(["1.0.0", "1.1.0", newVersion])[0] : newVersion;
    const latest = await seeder.resolve(base);
    expect(latest.body).toMatchObject({ version: expectedLatest, isLatest: true });
    const [row] = await db.database.knex("entries").select("version").where({ base_did: base, is_latest: true });
    expect(row.version).toBe(expectedLatest);
    return createdFirst;
  }

  it("leaves exactly one latest when the new version is the highest", async () => {
    await Promise.all(Array.from({ length: 6 }, (_, i) => race(`race-revoke-high-${i}`, "1.2.0")));
  });

  it("leaves exactly one latest, consistent with the order, when the new version is lower", async () => {
    await Promise.all(Array.from({ length: 6 }, (_, i) => race(`race-revoke-low-${i}`, "1.0.5")));
  });
});
