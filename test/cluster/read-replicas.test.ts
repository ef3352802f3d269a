import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { startRegistry } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import type { TestPublisher } from "../support/registry-fixture.js";
import { describeCluster, discoverTag, entryPath, eventually, httpJson, startPublisher, uniqueName, withPostgres } from "./cluster.js";

/** Postgres flushes a backend's statistics at most once a second, and after 10 s when it goes idle. */
const STATISTICS_BOUND_MS = 20_000;
const REPLICATION_BOUND_MS = 10_000;

describeCluster("reads on the streaming standby", (target) => {
  const [replicaA, replicaB] = target.replicaUrls;
  let publisher: TestPublisher;
  let token: string;

  beforeAll(async () => {
    ({ publisher, token } = await startPublisher(target));
  });

  const connections = (url: string) =>
    withPostgres(url, async (client) => {
      const { rows } = await client.query<{ application_name: string }>(
        "select application_name from pg_stat_activity where datname = current_database() and application_name like 'registry%'",
      );
      return new Set(rows.map((row) => row.application_name));
    });

  /** Scans of the entries table the standby has counted: only resolves and discovery make them. */
  const standbyEntryScans = () =>
    withPostgres(target.standbyUrl, async (client) => {
      const { rows } = await client.query<{ scans: string }>(
        "select coalesce(seq_scan, 0) + coalesce(idx_scan, 0) as scans from pg_stat_user_tables where relname = 'entries'",
      );
      return Number(rows[0]!.scans);
    });

  it("the replicas read from the standby as registry-read, and write through the primary", async () => {
    const calls = 20;
    const scansBefore = await standbyEntryScans();
    for (let index = 0; index < calls; index++) {
      const answer = await discoverTag(target.replicaUrls[index % 2]!, uniqueName("nothing"), 5);
      expect(answer.status).toBe(200);
    }

    expect(await connections(target.standbyUrl)).toEqual(new Set(["registry-read"]));
    expect(await connections(target.primaryUrl)).toEqual(new Set(["registry", "registry-changes"]));
    // Every discovery call scans the entries table at least once; on the standby, not the primary.
    await eventually(
      "the discovery calls in the standby's statistics",
      STATISTICS_BOUND_MS,
      async () => ((await standbyEntryScans()) >= scansBefore + calls ? true : undefined),
      250,
    );
  });

  it("refuses to start with a read URL that is not a replica of the primary", async () => {
    // The machine's own Postgres is a cluster of its own: its WAL positions mean nothing here.
    const unrelated = process.env.CLUSTER_UNRELATED_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
    const config = loadConfig({ DATABASE_URL: target.primaryUrl, DATABASE_READ_URL: unrelated, PORT: "0", MIGRATE_ON_START: "false" });
    await expect(startRegistry(config, { logger: createLogger(() => {}) })).rejects.toThrow(/not a streaming replica of DATABASE_URL/);
  });

  describe("while the standby's replay is paused", () => {
    const setReplay = (paused: boolean) =>
      withPostgres(target.standbyUrl, async (client) => {
        await client.query(paused ? "select pg_wal_replay_pause()" : "select pg_wal_replay_resume()");
        const expected = paused ? "paused" : "not paused";
        await eventually(
          `replay ${expected}`,
          5_000,
          async () => {
            const { rows } = await client.query<{ state: string }>("select pg_get_wal_replay_pause_state() as state");
            return rows[0]!.state === expected ? true : undefined;
          },
          20,
        );
      });
    afterEach(() => setReplay(false));

    it("an entry created on one replica resolves on both from the primary; discovery shows it once replay resumes", async () => {
      await setReplay(true);
      const tag = uniqueName("lagging");
      const entry = await publisher.entry(uniqueName("read-your-writes"), "1.0.0", { tags: [tag] });
      const created = await httpJson("POST", `${replicaA}/v1/entries`, { body: entry, token });
      expect(created.status).toBe(201);

      // Resolved at once through both: the writer marked the change before answering, so it reads
      // the primary; the other may not have heard of the change yet, and the standby (replay is
      // paused) does not have it, and a replica's "not found" is asked of the primary.
      const onWriter = await httpJson("GET", `${replicaA}${entryPath(entry.entryDid)}`);
      expect(onWriter.status).toBe(200);
      expect(onWriter.body).toMatchObject({ entryDid: entry.entryDid, signature: entry.signature });
      const resolvedOnOther = await httpJson("GET", `${replicaB}${entryPath(entry.entryDid)}`);
      expect(resolvedOnOther.status).toBe(200);
      const onOther = resolvedOnOther.body;
      expect(onOther).toMatchObject({ entryDid: entry.entryDid, signature: entry.signature });
      // The standby has not replayed it: discovery, which reads there, does not list it yet.
      for (const replica of [replicaA, replicaB]) {
        const page = await discoverTag(replica, tag, 5);
        expect(page.status).toBe(200);
        expect(page.body.total, `discovery on ${replica} while replay is paused`).toBe(0);
      }

      await setReplay(false);
      for (const replica of [replicaA, replicaB]) {
        await eventually(`discovery on ${replica} after replay resumed`, REPLICATION_BOUND_MS, async () => {
          const page = await discoverTag(replica, tag, 5);
          return page.status === 200 && page.body.total === 1 ? true : undefined;
        });
      }
    });
  });
});
