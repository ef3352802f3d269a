import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, fromBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createTestDatabase, testRedisUrl, usesPostgres, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { childEnv, freePort, startServerProcess, type ServerProcess } from "../support/child-processes.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";
import { RegistryService, ResolveEntryRequestSchema } from "../../gen/registry/v1/registry_service_pb.js";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";

/**
 * Per-client-IP limits on reads, through running servers: the bucket empties at its size and
 * refills at its rate, the answers tell clients where they stand, a forged X-Forwarded-For does
 * not buy a fresh bucket, replicas share one bucket, and a broken store does not stop reads.
 */

/** One token a second: a slow machine cannot refill a bucket between draining and checking it. */
const RATE = 1;
const BURST = 8;
const DID = "did:reg:main:skill:limited";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function withRegistry<T>(
  overrides: Parameters<typeof startTestRegistry>[1],
  work: (registry: TestRegistry) => Promise<T>,
): Promise<T> {
  // Buckets in Postgres outlive a registry; each test starts with every client's bucket full.
  await db.database.knex("rate_limit_buckets").del();
  const registry = await startTestRegistry(db.database, { rateLimitRps: RATE, rateLimitBurst: BURST, ...overrides });
  try {
    return await work(registry);
  } finally {
    await registry.close();
  }
}

/** Sends `count` resolves at once (an unknown DID: 404 still draws a token) and returns the statuses. */
async function burst(url: string, count: number, headers: Record<string, string> = {}): Promise<Response[]> {
  return Promise.all(Array.from({ length: count }, () => fetch(`${url}/v1/entries/${encodeURIComponent(DID)}`, { headers })));
}

const statuses = (responses: Response[]) => responses.map((response) => response.status);
const refused = (responses: Response[]) => responses.filter((response) => response.status === 429).length;

describe("the bucket", () => {
  it("allows a burst of its size, then refuses with 429, Retry-After and RateLimit headers, then recovers", async () => {
    await withRegistry({}, async (registry) => {
      const first = await burst(registry.url, BURST + 4);
      // A refill may land during the burst itself (one token a second), never more than one.
      expect(refused(first)).toBeGreaterThanOrEqual(3);
      expect(refused(first)).toBeLessThanOrEqual(4);
      expect(statuses(first).filter((status) => status === 404).length).toBe(BURST + 4 - refused(first));

      const allowed = first.find((response) => response.status === 404)!;
      expect(allowed.headers.get("ratelimit-policy")).toBe(`"reads";q=${BURST};w=${BURST / RATE}`);
      expect(allowed.headers.get("ratelimit")).toMatch(/^"reads";r=\d+;t=\d+$/);

      const denied = first.find((response) => response.status === 429)!;
      const retryAfter = Number(denied.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(denied.headers.get("ratelimit")).toMatch(/^"reads";r=0;t=\d+$/);
      const body = (await denied.json()) as { code: string; message: string; details: { "@type": string; retryDelay?: string }[] };
      expect(body.code).toBe("resource_exhausted");
      expect(body.message).toContain("rate limit exceeded");
      expect(body.details).toEqual([{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${retryAfter}s` }]);

      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 50));
      const after = await burst(registry.url, 1);
      expect(statuses(after)).toEqual([404]);
    });
  });

  it("refills at its rate: over two seconds about twice the rate more reads pass", async () => {
    const rate = 5;
    await withRegistry({ rateLimitRps: rate }, async (registry) => {
      await burst(registry.url, BURST + 2);
      const passed: number[] = [];
      const started = Date.now();
      while (Date.now() - started < 2_000) {
        passed.push(...statuses(await burst(registry.url, 1)).filter((status) => status === 404));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // 2 s at 5/s: 10, give or take the token in flight at each end.
      expect(passed.length).toBeGreaterThanOrEqual(2 * rate - 2);
      expect(passed.length).toBeLessThanOrEqual(2 * rate + 2);
    });
  });

  it("limits every read method, and every protocol, from one bucket; writes are not limited", async () => {
    await withRegistry({}, async (registry) => {
      const publisher = await createPublisher();
      const token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
      const post = (path: string, body: unknown) =>
        fetch(registry.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const reads = await Promise.all([
        ...Array.from({ length: 2 }, () => post("/v1/discover", {})),
        ...Array.from({ length: 2 }, () => post("/v1/discover/ql", { query: "SELECT * FROM entries" })),
        ...Array.from({ length: 2 }, () => fetch(`${registry.url}/v1/entries/${encodeURIComponent(DID)}/versions`)),
        ...Array.from({ length: 2 }, () => fetch(`${registry.url}/v1/entries/${encodeURIComponent(DID)}`)),
      ]);
      expect(refused(reads)).toBe(0);

      await burst(registry.url, 2);
      const connect = createClient(RegistryService, createConnectTransport({ baseUrl: registry.url, httpVersion: "1.1" }));
      const connectError = await connect.discoverEntries({}).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(connectError).toBeInstanceOf(ConnectError);
      expect((connectError as ConnectError).code).toBe(Code.ResourceExhausted);
      const [retryInfo] = (connectError as ConnectError).findDetails(RetryInfoSchema);
      expect(Number(retryInfo?.retryDelay?.seconds)).toBeGreaterThanOrEqual(1);

      await burst(registry.url, 2);
      const grpcStatus = await grpcResolve(registry.url);
      expect(grpcStatus.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(grpcStatus.retryDelaySeconds).toBeGreaterThanOrEqual(1);

      const created = await fetch(`${registry.url}/v1/entries`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(await publisher.entry("limited-write", "1.0.0")),
      });
      expect(created.status).toBe(201);
    });
  });

  it("is off with RATE_LIMIT_RPS=0: no refusals, no headers", async () => {
    await withRegistry({ rateLimitRps: 0 }, async (registry) => {
      const responses = await burst(registry.url, BURST * 4);
      expect(new Set(statuses(responses))).toEqual(new Set([404]));
      expect(responses[0]!.headers.get("ratelimit")).toBeNull();
    });
  });
});

async function grpcResolve(url: string): Promise<{ code: number; retryDelaySeconds: number }> {
  const Client = grpcJsClientConstructor(RegistryService);
  const client = new Client(new URL(url).host, grpc.credentials.createInsecure()) as any;
  try {
    return await new Promise((resolve) => {
      client.ResolveEntry(create(ResolveEntryRequestSchema, { did: DID }), new grpc.Metadata(), (error: grpc.ServiceError | null) => {
        const raw = error?.metadata.get("grpc-status-details-bin")[0] as Buffer | undefined;
        const status = raw === undefined ? undefined : fromBinary(StatusSchema, raw);
        const retry = status?.details.find((any) => any.typeUrl.endsWith("google.rpc.RetryInfo"));
        const delay = retry === undefined ? 0 : Number(fromBinary(RetryInfoSchema, retry.value).retryDelay?.seconds ?? 0);
        resolve({ code: error?.code ?? grpc.status.OK, retryDelaySeconds: delay });
      });
    });
  } finally {
    client.close();
  }
}

describe("the client address", () => {
  it("an untrusted peer's X-Forwarded-For is ignored: forging it does not escape the limit", async () => {
    await withRegistry({}, async (registry) => {
      const forged = await Promise.all(
        Array.from({ length: BURST + 4 }, (_, i) => burst(registry.url, 1, { "x-forwarded-for": `203.0.113.${i}` })),
      );
      expect(refused(forged.flat())).toBeGreaterThanOrEqual(3);
    });
  });

  it("behind a trusted proxy, each forwarded client has its own bucket, read hop by hop from the right", async () => {
    await withRegistry({ trustProxy: ["loopback"] }, async (registry) => {
      const alice = await burst(registry.url, BURST + 3, { "x-forwarded-for": "198.51.100.1" });
      expect(refused(alice)).toBeGreaterThanOrEqual(2);
      const bob = await burst(registry.url, BURST, { "x-forwarded-for": "198.51.100.2" });
      expect(refused(bob)).toBe(0);
      // Alice prepending a made-up address is still Alice: the proxy appended her real one last.
      const aliceAgain = await burst(registry.url, 3, { "x-forwarded-for": "192.0.2.99, 198.51.100.1" });
      expect(refused(aliceAgain)).toBeGreaterThanOrEqual(2);
    });
  });
});

describe("shared by replicas", () => {
  it.runIf(testRedisUrl() !== undefined)("two registries using one Redis share each client's bucket", async () => {
    const redisUrl = testRedisUrl()!;
    // A distinct address per run keeps earlier runs' buckets in the shared Redis out of the way.
    const client = `198.51.100.${Math.floor(Math.random() * 250) + 1}, 2001:db8::${Date.now().toString(16).slice(-4)}`;
    await withRegistry({ redisUrl, trustProxy: ["loopback"] }, (first) =>
      withRegistry({ redisUrl, trustProxy: ["loopback"] }, async (second) => {
        const half = Math.ceil(BURST / 2);
        const fromFirst = await burst(first.url, half, { "x-forwarded-for": client });
        const fromSecond = await burst(second.url, BURST - half + 3, { "x-forwarded-for": client });
        expect(refused(fromFirst)).toBe(0);
        expect(refused(fromSecond)).toBeGreaterThanOrEqual(2);
      }),
    );
  });

  it.runIf(usesPostgres())("two server processes on one Postgres database share each client's bucket", async () => {
    await db.database.knex("rate_limit_buckets").del();
    const env = childEnv({ DATABASE_URL: db.url, RATE_LIMIT_RPS: String(RATE), RATE_LIMIT_BURST: String(BURST) });
    const servers: ServerProcess[] = [];
    try {
      servers.push(await startServerProcess([], await freePort(), env));
      servers.push(await startServerProcess([], await freePort(), env));
      const half = Math.ceil(BURST / 2);
      const fromFirst = await burst(servers[0]!.url, half);
      const fromSecond = await burst(servers[1]!.url, BURST - half + 3);
      expect(refused(fromFirst)).toBe(0);
      expect(refused(fromSecond)).toBeGreaterThanOrEqual(2);
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
    }
  });

  it("a store that cannot be reached does not take reads down: each process limits on its own", async () => {
    await withRegistry({ redisUrl: "redis://127.0.0.1:1" }, async (registry) => {
      const responses = await burst(registry.url, BURST + 4);
      expect(statuses(responses).filter((status) => status === 404).length).toBeGreaterThanOrEqual(BURST);
      expect(refused(responses)).toBeGreaterThanOrEqual(3);
      expect(statuses(responses).every((status) => status === 404 || status === 429)).toBe(true);
    });
  });
});
