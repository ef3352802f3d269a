import { afterAll, beforeAll, expect, it } from "vitest";
import type { TestPublisher } from "../support/registry-fixture.js";
import { registryClient, type RegistryCalls } from "../support/protocol-clients.js";
import { describeCluster, httpJson, startPublisher, uniqueName, withPostgres } from "./cluster.js";

/** Creates in flight at once: REST workers through nginx's HTTP/1.1 port, gRPC ones through its h2c port. */
const REST_WORKERS = 6;
const GRPC_WORKERS = 2;
/** Acknowledged creates before the kill, and at least after it. */
const BEFORE_KILL = 60;
const AFTER_KILL = 60;
/**
 * How long the load goes on after the kill: past nginx's fail_timeout (5 s), when it tries the
 * dead replica again, finds it refusing connections and passes those creates to the other.
 */
const LOAD_AFTER_KILL_MS = 6_000;
const LOAD_BOUND_MS = 30_000;

interface Attempt {
  readonly did: string;
  readonly startedAt: number;
  /** 201 or "ok": acknowledged; anything else, an HTTP status, a gRPC code or an error. */
  readonly outcome: string;
}

/**
 * Runs by itself after the other cluster tests (.ci/cluster/run): it leaves the cluster with one
 * registry replica.
 */
describeCluster("a registry replica killed under a create load", (target) => {
  const [, victimUrl] = target.replicaUrls;
  const [, victimPid] = target.replicaPids;
  let publisher: TestPublisher;
  let token: string;
  const grpc: Array<RegistryCalls & { close(): void }> = [];

  beforeAll(async () => {
    ({ publisher, token } = await startPublisher(target));
    for (let index = 0; index < GRPC_WORKERS; index++) grpc.push(registryClient("grpc", `http://${target.nginxGrpcAddress}`));
  });
  afterAll(() => {
    for (const client of grpc) client.close();
  });

  async function createOverRest(entry: Record<string, any>): Promise<string> {
    const answer = await httpJson("POST", `${target.nginxUrl}/v1/entries`, { body: entry, token });
    return String(answer.status);
  }

  async function createOverGrpc(client: RegistryCalls, entry: Record<string, any>): Promise<string> {
    return (await client.create(entry, token)).code;
  }

  const acknowledged = (attempt: Attempt) => attempt.outcome === "201" || attempt.outcome === "ok";

  /** Creates served by the victim so far, from its own /metrics (nginx does not serve them). */
  async function createsServedByVictim(): Promise<number> {
    const metrics = await httpJson("GET", `${victimUrl}/metrics`);
    const lines = String(metrics.body)
      .split("\n")
      .filter(
        (line) => line.startsWith("registry_rpc_duration_seconds_count{") && line.includes('/CreateEntry"') && line.includes('code="ok"'),
      );
    return lines.reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
  }

  it("loses no acknowledged create, and the other replica serves the rest", async () => {
    const attempts: Attempt[] = [];
    let killing = false;
    let killedAt: number | undefined;
    let servedByVictim = 0;
    let acknowledgedAfterKill = 0;
    const deadline = Date.now() + LOAD_BOUND_MS;
    const done = () =>
      (killedAt !== undefined && acknowledgedAfterKill >= AFTER_KILL && performance.now() > killedAt + LOAD_AFTER_KILL_MS) ||
      Date.now() > deadline;

    const worker = async (create: (entry: Record<string, any>) => Promise<string>) => {
      while (!done()) {
        const entry = await publisher.entry(uniqueName("under-load"), "1.0.0");
        const startedAt = performance.now();
        const outcome = await create(entry).catch((error: Error) => `error: ${error.message}`);
        const attempt = { did: entry.entryDid as string, startedAt, outcome };
        attempts.push(attempt);
        if (acknowledged(attempt) && killedAt !== undefined && startedAt > killedAt) acknowledgedAfterKill++;
        if (!killing && attempts.filter(acknowledged).length >= BEFORE_KILL) {
          killing = true;
          // The victim has been taking its share of the load: it dies with requests in flight.
          servedByVictim = await createsServedByVictim();
          killedAt = performance.now();
          process.kill(victimPid, "SIGKILL");
        }
      }
    };
    await Promise.all([
      ...Array.from({ length: REST_WORKERS }, () => worker(createOverRest)),
      ...grpc.map((client) => worker((entry) => createOverGrpc(client, entry))),
    ]);

    expect(killedAt, "the victim was killed").toBeDefined();
    expect(servedByVictim, "creates the victim had served").toBeGreaterThan(0);
    await expect(httpJson("GET", `${victimUrl}/healthz`), "the victim is gone").rejects.toThrow();
    expect(acknowledgedAfterKill, "creates acknowledged after the kill").toBeGreaterThanOrEqual(AFTER_KILL);

    const acknowledgedDids = attempts.filter(acknowledged).map((attempt) => attempt.did);
    const stored = await withPostgres(target.primaryUrl, async (client) => {
      const { rows } = await client.query<{ entry_did: string }>("select entry_did from entries where entry_did = any($1)", [
        acknowledgedDids,
      ]);
      return new Set(rows.map((row) => row.entry_did));
    });
    const lost = acknowledgedDids.filter((did) => !stored.has(did));
    expect(lost, "acknowledged creates missing from the primary").toEqual([]);

    // Only creates in flight at the kill may fail; once nginx has seen the victim fail, every
    // create goes to the other replica.
    const failed = attempts.filter((attempt) => !acknowledged(attempt));
    const failedLater = failed.filter((attempt) => attempt.startedAt > killedAt! + 1_000);
    expect(failedLater, "creates failed a second or more after the kill").toEqual([]);
    expect(failed.length).toBeLessThanOrEqual(REST_WORKERS + GRPC_WORKERS);
  });
});
