import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { usesPostgres, withAdmin } from "../support/test-database.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * Read routing against a real Postgres. Without a streaming replica here, a "replica" is the
 * primary itself under a second pool (always caught up), or an address where nothing listens.
 * Replication lag, and reads that must skip a lagging replica, are proved by the cluster test
 * (.ci/cluster) on a real primary and standby.
 */

const DEAD_REPLICA = "postgres://postgres@127.0.0.1:1/none";

function sample(text: string, series: string): number {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const reads = (target: string, reason: string) => `registry_db_reads_total{target="${target}",reason="${reason}"}`;

describe.skipIf(!usesPostgres())("read replicas (DATABASE_READ_URL)", () => {
  let setup: PublishingSetup | undefined;
  afterEach(async () => {
    await setup?.close();
    setup = undefined;
  });

  async function publish(name: string, version = "1.0.0"): Promise<string> {
    const entry = await setup!.publisher.entry(name, version);
    const response = await fetch(`${setup!.registry.url}/v1/entries`, {
      method: "POST",
      headers: { authorization: `Bearer ${setup!.token}`, "content-type": "application/json" },
      body: JSON.stringify(entry),
    });
    expect(response.status).toBe(201);
    return entry.entryDid as string;
  }

  const discover = async () => {
    const response = await fetch(`${setup!.registry.url}/v1/discover`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ entryType: "skill", conditions: [], limit: 10 }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as { entries: Array<{ entryDid: string }> };
  };
  const search = async (q: string) => {
    const response = await fetch(`${setup!.registry.url}/v1/search?q=${encodeURIComponent(q)}`);
    expect(response.status).toBe(200);
    return (await response.json()) as { entries: Array<{ entryDid: string }> };
  };
  const metrics = async () => (await fetch(setup!.registry.running.metricsUrl)).text();

  // The same database as its own replica (reachable, same cluster, never behind), under a second pool.
  it("serves resolves, discovery and search from the read pool (connected as registry-read) and keeps a fresh write visible to its writer", async () => {
    setup = await startPublishingRegistry(["registry.publish.skill"], (db) => ({ entryCacheSize: 0, databaseReadUrls: [db.url!] }));
    const did = await publish("fresh-write");
    // Resolved at once by the process that wrote it: a replica that had not replayed the write
    // yet is not asked.
    const resolved = await fetch(`${setup.registry.url}/v1/entries/${encodeURIComponent(did)}`);
    expect(resolved.status).toBe(200);
    expect((await discover()).entries.map((entry) => entry.entryDid)).toContain(did);
    const replicaReads = sample(await metrics(), reads("replica", "replica"));
    expect((await search("fresh-write")).entries.map((entry) => entry.entryDid)).toEqual([did]);
    const text = await metrics();
    expect(replicaReads).toBeGreaterThanOrEqual(1);
    expect(sample(text, reads("replica", "replica"))).toBe(replicaReads + 1);
    const readPools = await withAdmin(setup.db.url!, (client) =>
      client.query(
        "select count(*)::int as n from pg_stat_activity where application_name = 'registry-read' and datname = current_database()",
      ),
    );
    expect(readPools.rows[0].n).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^registry_db_pool_connections_max\{pool="replica-1"\} \d+$/m);
  });

  it("answers every read from the primary while the replica is down, resting it between tries", async () => {
    setup = await startPublishingRegistry(["registry.publish.skill"], { entryCacheSize: 0, databaseReadUrls: [DEAD_REPLICA] });
    const did = await publish("replica-down");
    for (let attempt = 0; attempt < 3; attempt++) {
      expect((await discover()).entries.map((entry) => entry.entryDid)).toContain(did);
      expect((await search("replica-down")).entries.map((entry) => entry.entryDid)).toEqual([did]);
      const versions = await fetch(`${setup.registry.url}/v1/entries/${encodeURIComponent(did.split("@")[0]!)}/versions`);
      expect(versions.status).toBe(200);
    }
    const text = await metrics();
    expect(sample(text, reads("primary", "replica-failed"))).toBeGreaterThanOrEqual(1);
    expect(sample(text, reads("primary", "replicas-resting"))).toBeGreaterThanOrEqual(2);
  });
});

describe("DATABASE_READ_URL configuration", () => {
  it("needs DATABASE_URL: the embedded database has no replicas", () => {
    expect(() => loadConfig({ DATABASE_READ_URL: "postgres://replica/db" })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_READ_URL: "postgres://replica/db" })).toThrow(/DATABASE_URL/);
  });

  it("takes a comma-separated list of postgres URLs and refuses anything else", () => {
    const config = loadConfig({ DATABASE_URL: "postgres://primary/db", DATABASE_READ_URL: "postgres://a/db, postgresql://b/db" });
    expect(config.databaseReadUrls).toEqual(["postgres://a/db", "postgresql://b/db"]);
    expect(() => loadConfig({ DATABASE_URL: "postgres://primary/db", DATABASE_READ_URL: "mysql://a/db" })).toThrow(/DATABASE_READ_URL/);
    expect(loadConfig({ DATABASE_URL: "postgres://primary/db" }).databaseReadUrls).toEqual([]);
  });
});
