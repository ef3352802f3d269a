import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RegistryConfig } from "../../src/config.js";
import { createPostgresChangeFeed, ENTRY_CHANGES_CHANNEL } from "../../src/storage/change-feed.js";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { startBlackholeProxy, throughProxy, type BlackholeProxy } from "../support/blackhole-proxy.js";
import { PROTOCOLS, registryClient, type CallResult } from "../support/protocol-clients.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, usesPostgres, type TestDatabase } from "../support/test-database.js";

/**
 * A registry whose every connection to Postgres goes through a proxy that can play a network
 * partition: nothing is forwarded and nothing is closed, so only timeouts can tell. A second
 * registry on the direct URL is the write path the partition does not cut.
 */

/** Short settings, so the test runs in seconds; production defaults are a few seconds each. */
const SETTINGS = {
  statementTimeoutMs: 1_000,
  databaseConnectTimeoutMs: 1_000,
  databaseAcquireTimeoutMs: 1_500,
  databaseQueryTimeoutMs: 1_500,
  readinessTimeoutMs: 1_000,
  entryCacheHeartbeatMs: 1_000,
} satisfies Partial<RegistryConfig>;

/** Longest a call may take in a partition: it waits for a connection, or for an answer. */
const CALL_BOUND_MS = SETTINGS.databaseAcquireTimeoutMs + SETTINGS.databaseQueryTimeoutMs;
/** The feed is checked every heartbeat and declared dead when a check goes unanswered as long. */
const FEED_DEAD_BOUND_MS = 2 * SETTINGS.entryCacheHeartbeatMs;
/** Slack for a busy machine on top of every bound. */
const MARGIN_MS = 2_000;
/** How long a call is awaited before it counts as hanging. */
const HANG_CAP_MS = 15_000;

interface Timed<T> {
  readonly outcome: T | "no answer";
  readonly ms: number;
}

async function timed<T>(work: Promise<T>, capMs = HANG_CAP_MS): Promise<Timed<T>> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<"no answer">((resolve) => (timer = setTimeout(() => resolve("no answer"), capMs)));
  work.catch(() => {});
  const outcome = await Promise.race([work, cap]);
  clearTimeout(timer);
  return { outcome, ms: Math.round(performance.now() - started) };
}

const codeOf = (timedCall: Timed<CallResult>) => (timedCall.outcome === "no answer" ? "no answer" : timedCall.outcome.code);

async function readyz(url: string): Promise<number> {
  const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(HANG_CAP_MS + 1_000) });
  await response.arrayBuffer();
  return response.status;
}

async function eventually(check: () => Promise<boolean>, withinMs: number, what: string): Promise<number> {
  const started = performance.now();
  while (!(await check().catch(() => false))) {
    if (performance.now() - started > withinMs) throw new Error(`${what} did not happen within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return Math.round(performance.now() - started);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!usesPostgres())("a network partition between the registry and Postgres", () => {
  let db: TestDatabase;
  let proxy: BlackholeProxy;
  let proxiedUrl: string;
  let partitioned: Database;
  let direct: TestRegistry;
  const registries: TestRegistry[] = [];
  let publisher: TestPublisher;
  let token: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const target = new URL(db.url!);
    proxy = await startBlackholeProxy({ host: target.hostname, port: Number(target.port || 5432) });
    proxiedUrl = throughProxy(db.url!, proxy);
    partitioned = await openDatabase({ databaseUrl: proxiedUrl, dataDir: "", poolMax: 4, ...SETTINGS });
    direct = await startTestRegistry(db.database);
    publisher = await createPublisher();
    token = await direct.accessToken(publisher.did, ["registry.publish.skill"]);
  });

  afterEach(() => proxy.heal());

  afterAll(async () => {
    proxy?.heal();
    for (const registry of registries) await registry.close();
    await direct?.close();
    await partitioned?.close();
    await db?.drop();
    await proxy?.close();
  });

  async function startPartitionedRegistry(): Promise<TestRegistry> {
    const registry = await startTestRegistry(partitioned, SETTINGS);
    registries.push(registry);
    return registry;
  }

  it("answers unavailable within the bound while Postgres is unreachable, and recovers by itself", async () => {
    const registry = await startPartitionedRegistry();
    const rest = registryClient("rest", registry.url);
    const clients = PROTOCOLS.map((protocol) => registryClient(protocol, registry.url));
    const base = "did:reg:main:skill:partition-bound";
    expect((await rest.create(await publisher.entry("partition-bound", "1.0.0"), token)).code).toBe("ok");
    const nextEntry = await publisher.entry("partition-bound", "2.0.0");

    proxy.blackhole();
    // More calls than the pool has connections: some wait for a connection, some for an answer.
    const [resolves, create, ready, page] = await Promise.all([
      Promise.all(clients.map((client, index) => timed(client.resolve(`did:reg:main:skill:uncached-${index}`)))),
      timed(rest.create(nextEntry, token)),
      timed(readyz(registry.url)),
      // The explorer's entry page looks the entry up to answer 200 or 404: it cannot say either.
      timed(fetch(`${registry.url}/entries/did:reg:main:skill:uncached-page`).then((response) => response.status)),
    ]);
    // Then one more, once the connections that were open have been given up.
    const later = await timed(rest.resolve("did:reg:main:skill:uncached-later"));
    const figures = {
      resolves: resolves.map((call, index) => `${PROTOCOLS[index]} ${codeOf(call)} ${call.ms} ms`),
      create: `${codeOf(create)} ${create.ms} ms`,
      readyz: `${ready.outcome} ${ready.ms} ms`,
      page: `${page.outcome} ${page.ms} ms`,
      later: `${codeOf(later)} ${later.ms} ms`,
    };
    console.info("in a partition:", figures);
    for (const call of [...resolves, create, later]) {
      expect(codeOf(call), JSON.stringify(figures)).toBe("unavailable");
      expect(call.ms, JSON.stringify(figures)).toBeLessThan(CALL_BOUND_MS + MARGIN_MS);
    }
    expect(ready.outcome, JSON.stringify(figures)).toBe(503);
    expect(page.outcome, JSON.stringify(figures)).toBe(503);
    expect(page.ms, JSON.stringify(figures)).toBeLessThan(CALL_BOUND_MS + MARGIN_MS);
    expect(ready.ms, JSON.stringify(figures)).toBeLessThan(SETTINGS.readinessTimeoutMs + MARGIN_MS);

    proxy.heal();
    const recoveredMs = await eventually(
      async () => (await readyz(registry.url)) === 200 && (await rest.resolve(base)).code === "ok",
      10_000,
      "recovery after the partition healed",
    );
    console.info(`recovered ${recoveredMs} ms after the partition healed`);
    expect((await rest.create(nextEntry, token)).code).toBe("ok");
    for (const client of clients) expect((await client.resolve(`${base}@2.0.0`)).code).toBe("ok");
    for (const client of clients) client.close();
  }, 60_000);

  it("declares its change feed dead when the heartbeat goes unanswered, and listens again once healed", async () => {
    const events: string[] = [];
    const feed = await createPostgresChangeFeed({
      databaseUrl: proxiedUrl,
      connectTimeoutMs: SETTINGS.databaseConnectTimeoutMs,
      heartbeatMs: SETTINGS.entryCacheHeartbeatMs,
      maxBackoffMs: 500,
    });
    feed.subscribe({ onChange: (did) => events.push(`change ${did}`), onReset: () => events.push("reset") });
    try {
      expect(feed.live).toBe(true);
      proxy.blackhole();
      const deadAfter = await timed(
        (async () => {
          while (feed.live) await sleep(20);
        })(),
      );
      console.info(`change feed declared dead ${deadAfter.ms} ms into the partition`);
      expect(deadAfter.outcome).not.toBe("no answer");
      expect(deadAfter.ms).toBeLessThan(FEED_DEAD_BOUND_MS + MARGIN_MS);
      expect(events).toContain("reset");

      proxy.heal();
      await eventually(async () => feed.live, 10_000, "the change feed listening again");
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      await admin.query("select pg_notify($1, $2)", [ENTRY_CHANGES_CHANNEL, "did:reg:main:skill:after-healing"]);
      await admin.end();
      await eventually(async () => events.includes("change did:reg:main:skill:after-healing"), 5_000, "a notification after healing");
    } finally {
      await feed.close();
    }
  }, 60_000);

  it("stops serving a cached answer once its change feed is declared dead", async () => {
    const registry = await startPartitionedRegistry();
    const read = registryClient("rest", registry.url);
    const write = registryClient("rest", direct.url);
    const did = "did:reg:main:skill:partition-cache@1.0.0";
    expect((await write.create(await publisher.entry("partition-cache", "1.0.0"), token)).code).toBe("ok");
    expect((await read.resolve(did)).body.status).toBe("active");
    expect((await read.resolve(did)).body.status).toBe("active");

    proxy.blackhole();
    const started = performance.now();
    // Answered at once from the cache (the database is cut off): the heartbeat gives the feed a
    // full second before declaring it dead, far more than this call takes.
    expect((await read.resolve(did)).body.status).toBe("active");
    // Revoked through the path the partition does not cut; its notification cannot arrive.
    expect((await write.revoke(did, await publisher.revocation(did, "partitioned"), token)).code).toBe("ok");

    let answer: CallResult;
    do {
      answer = (await timed(read.resolve(did))).outcome as CallResult;
      if (answer.code === "ok" && answer.body.status === "active") await sleep(50);
      else break;
    } while (performance.now() - started < HANG_CAP_MS);
    const staleForMs = Math.round(performance.now() - started);
    console.info(`stale answer served for ${staleForMs} ms into the partition, then: ${answer.code}`);
    expect(answer.code, `still ${answer.body?.status} after ${staleForMs} ms`).toBe("unavailable");
    expect(staleForMs).toBeLessThan(FEED_DEAD_BOUND_MS + CALL_BOUND_MS + MARGIN_MS);

    proxy.heal();
    await eventually(async () => (await read.resolve(did)).body?.status === "revoked", 10_000, "the revocation showing after healing");
  }, 60_000);
});
