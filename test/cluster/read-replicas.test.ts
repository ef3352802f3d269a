import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TestPublisher } from "../support/registry-fixture.js";
import { describeCluster, discoverTag, entryPath, eventually, httpJson, startPublisher, uniqueName, withPostgres } from "./cluster.js";

/** Postgres flushes a backend's statistics at most once a second, and after 10 s when it goes idle. */
const STATISTICS_BOUND_MS = 20_000;
const REPLICATION_BOUND_MS = 10_000;
/** How long a change's notification may take to reach the other replica's LISTEN connection. */
const NOTIFICATION_BOUND_MS = 2_000;

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
    await eventually("the discovery calls in the standby's statistics", STATISTICS_BOUND_MS, async () =>
      (await standbyEntryScans()) >= scansBefore + calls ? true : undefined, 250);
  });

  describe("while the standby's replay is paused", () => {
    const setReplay = (paused: boolean) =>
      withPostgres(target.standbyUrl, async (client) => {
        await client.query(paused ? "select pg_wal_replay_pause()" : "select pg_wal_replay_resume()");
        const expected = paused ? "paused" : "not paused";
        await eventually(`replay ${expected}`, 5_000, async () => {
          const { rows } = await client.query<{ state: string }>("select pg_get_wal_replay_pause_state() as state");
          return rows[0]!.state === expected ? true : undefined;
        }, 20);
      });
    afterEach(() => setReplay(false));

    it("an entry created on one replica resolves on both from the primary; discovery shows it once replay resumes", async () => {
      await setReplay(true);
      const tag = uniqueName("lagging");
      const entry = await publisher.entry(uniqueName("read-your-writes"), "1.0.0", { tags: [tag] });
      const created = await httpJson("POST", `${replicaA}/v1/entries`, { body: entry, token });
      expect(created.status).toBe(201);

      // Changed recently, so read from the primary: at once by the replica that wrote it, which
      // marked the change before answering; by the other once the primary's notification of the
      // change has reached it, a few milliseconds later (a read in between may get the standby's
      // "not found"). Replay is paused, so only the primary can have answered.
      const onWriter = await httpJson("GET", `${replicaA}${entryPath(entry.entryDid)}`);
      expect(onWriter.status).toBe(200);
      expect(onWriter.body).toMatchObject({ entryDid: entry.entryDid, signature: entry.signature });
      const onOther = await eventually("the entry on the other replica", NOTIFICATION_BOUND_MS, async () => {
        const resolved = await httpJson("GET", `${replicaB}${entryPath(entry.entryDid)}`);
        return resolved.status === 200 ? resolved.body : undefined;
      }, 20);
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
