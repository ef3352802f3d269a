import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBinary, fromJson, type DescService, type JsonValue } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { createTestDatabase, testRedisUrl, usesPostgres, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";
import { PROTOCOLS, type Protocol } from "../support/protocol-clients.js";
import { ed25519TestKey, forgeToken } from "../auth/auth-fixtures.js";
import { ConfigError, loadConfig, type RegistryConfig } from "../../src/config.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import { TokenService } from "../../gen/auth/v1/token_service_pb.js";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";

/**
 * Per-publisher limits on creates and revokes, and per-address limits on token issuance, through
 * running servers and real clients of every protocol: a bucket empties at its size, refusals say
 * when to come back, buckets are kept apart (publishers, policies, addresses), a caller whose
 * token does not verify cannot spend a publisher's writes, replicas share buckets, and 0 turns a
 * limit off.
 */

/**
 * One token every 10 s: a busy machine cannot refill a bucket between draining it and probing
 * it. A burst's calls all arrive within a second or two, so at most one refill lands among them.
 */
const RATE = 0.1;
const BURST = 3;
const OVER = 3;
/** Seconds an empty bucket takes to fill: the RateLimit-Policy window. */
const WINDOW = 30;
const SCOPES = ["registry.publish.skill"];
/** The issuer's URL in the test registry, which forged tokens claim. */
const ISSUER = "http://registry.test";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const WRITE_LIMITS: Partial<RegistryConfig> = { writeRateLimitRps: RATE, writeRateLimitBurst: BURST };
const TOKEN_LIMITS: Partial<RegistryConfig> = { tokenRateLimitRps: RATE, tokenRateLimitBurst: BURST };

async function withRegistry<T>(overrides: Partial<RegistryConfig>, work: (registry: TestRegistry) => Promise<T>): Promise<T> {
  // Buckets in Postgres outlive a registry; each test starts with every bucket full.
  await db.database.knex("rate_limit_buckets").del();
  const registry = await startTestRegistry(db.database, overrides);
  try {
    return await work(registry);
  } finally {
    await registry.close();
  }
}

/** One call's outcome as its client saw it, the same shape on every protocol. */
interface Answer {
  /** "ok" or the code's name, e.g. "resource_exhausted". */
  readonly code: string;
  /** Response headers (with trailers, where the protocol sends the status in them). */
  readonly headers: Headers;
  /** The delay of a google.rpc.RetryInfo detail, when there is one. */
  readonly retryDelaySeconds?: number;
  /** HTTP status (REST only). */
  readonly status?: number;
}

interface Calls {
  create(entry: Record<string, unknown>, token?: string): Promise<Answer>;
  revoke(did: string, body: { reason: string; signature: string }, token?: string): Promise<Answer>;
  resolve(did: string): Promise<Answer>;
  issueToken(rootToken: string, headers?: Record<string, string>): Promise<Answer>;
  close(): void;
}

type Call = (service: DescService, method: string, request: Record<string, unknown>, token?: string) => Promise<Answer>;

function clientFor(protocol: Protocol, url: string): Calls {
  if (protocol === "rest") return restCalls(url);
  const rpc =
    protocol === "grpc"
      ? grpcJsCall(url)
      : connectCall(
          protocol === "connect"
            ? createConnectTransport({ baseUrl: url, httpVersion: "1.1" })
            : createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1" }),
        );
  return {
    create: (entry, token) => rpc.call(RegistryService, "CreateEntry", { entry }, token),
    revoke: (did, body, token) => rpc.call(RegistryService, "RevokeEntry", { did, ...body }, token),
    resolve: (did) => rpc.call(RegistryService, "ResolveEntry", { did }),
    issueToken: (rootToken) => rpc.call(TokenService, "IssueToken", { scopes: SCOPES }, rootToken),
    close: rpc.close,
  };
}

function restCalls(url: string): Calls {
  const send = async (
    method: string,
    path: string,
    body?: unknown,
    token?: string,
    extra: Record<string, string> = {},
  ): Promise<Answer> => {
    const headers: Record<string, string> = { ...extra };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const response = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await response.json()) as { code?: string; details?: { "@type": string; retryDelay?: string }[] };
    const retry = json.details?.find((detail) => detail["@type"].endsWith("google.rpc.RetryInfo"));
    return {
      code: response.ok ? "ok" : json.code!,
      headers: response.headers,
      status: response.status,
      retryDelaySeconds: retry?.retryDelay === undefined ? undefined : Number.parseInt(retry.retryDelay, 10),
    };
  };
  const path = (did: string) => `/v1/entries/${encodeURIComponent(did)}`;
  return {
    create: (entry, token) => send("POST", "/v1/entries", entry, token),
    revoke: (did, body, token) => send("DELETE", path(did), body, token),
    resolve: (did) => send("GET", path(did)),
    issueToken: (rootToken, headers) => send("POST", "/v1/tokens", { scopes: SCOPES }, rootToken, headers),
    close() {},
  };
}

function connectCall(transport: Transport): { call: Call; close(): void } {
  return {
    async call(service, method, request, token) {
      const client = createClient(service, transport) as unknown as Record<string, (input: unknown, options: unknown) => Promise<unknown>>;
      const desc = service.methods.find((m) => m.name === method)!;
      let headers = new Headers();
      try {
        await client[lowerFirst(method)]!(fromJson(desc.input, request as JsonValue), {
          headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
          onHeader: (received: Headers) => (headers = received),
        });
        return { code: "ok", headers };
      } catch (error) {
        if (!(error instanceof ConnectError)) throw error;
        const [retry] = error.findDetails(RetryInfoSchema);
        return {
          code: codeName(error.code),
          headers: error.metadata,
          retryDelaySeconds: retry?.retryDelay === undefined ? undefined : Number(retry.retryDelay.seconds),
        };
      }
    },
    close() {},
  };
}

function grpcJsCall(url: string): { call: Call; close(): void } {
  const clients = new Map<DescService, any>();
  const clientOf = (service: DescService) => {
    if (!clients.has(service))
      clients.set(service, new (grpcJsClientConstructor(service))(new URL(url).host, grpc.credentials.createInsecure()));
    return clients.get(service);
  };
  return {
    call(service, method, request, token) {
      const desc = service.methods.find((m) => m.name === method)!;
      const metadata = new grpc.Metadata();
      if (token !== undefined) metadata.set("authorization", `Bearer ${token}`);
      return new Promise((resolve) => {
        let headers = new Headers();
        const call = clientOf(service)[method](fromJson(desc.input, request as JsonValue), metadata, (error: grpc.ServiceError | null) => {
          if (error === null) {
            resolve({ code: "ok", headers });
            return;
          }
          // An error before any message comes as trailers only: its metadata holds every header.
          const raw = error.metadata.get("grpc-status-details-bin")[0] as Buffer | undefined;
          const status = raw === undefined ? undefined : fromBinary(StatusSchema, raw);
          const retry = status?.details.find((any) => any.typeUrl.endsWith("google.rpc.RetryInfo"));
          resolve({
            code: codeName(error.code),
            headers: headersOf(error.metadata),
            retryDelaySeconds: retry === undefined ? undefined : Number(fromBinary(RetryInfoSchema, retry.value).retryDelay?.seconds),
          });
        });
        call.on("metadata", (received: grpc.Metadata) => (headers = headersOf(received)));
      });
    },
    close() {
      for (const client of clients.values()) client.close();
    },
  };
}

function headersOf(metadata: grpc.Metadata): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(metadata.getMap())) if (typeof value === "string") headers.set(name, value);
  return headers;
}

/** gRPC and Connect share code numbers: 8 is resource_exhausted. */
function codeName(code: number): string {
  return code === 0 ? "ok" : Code[code]!.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

const codes = (answers: readonly Answer[]) => answers.map((answer) => answer.code);
const count = (answers: readonly Answer[], code: string) => answers.filter((answer) => answer.code === code).length;

/** `n` signed entries of one publisher, made before any is sent so the calls arrive together. */
function entries(publisher: TestPublisher, prefix: string, n: number): Promise<Record<string, any>[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => publisher.entry(`${prefix}-${i}`, "1.0.0")));
}

/** The refusal every protocol must give past a limit: its code, the headers, and when to retry. */
function expectRefusal(answer: Answer, policy: string, protocol: Protocol): void {
  expect(answer.code).toBe("resource_exhausted");
  if (protocol === "rest") expect(answer.status).toBe(429);
  const retryAfter = Number(answer.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(1 / RATE);
  expect(answer.retryDelaySeconds).toBe(retryAfter);
  expect(answer.headers.get("ratelimit-policy")).toBe(`"${policy}";q=${BURST};w=${WINDOW}`);
  expect(answer.headers.get("ratelimit")).toMatch(new RegExp(`^"${policy}";r=0;t=\\d+$`));
}

describe.each(PROTOCOLS)("write limits on %s", (protocol) => {
  it("a publisher past its burst is refused, creates and revokes alike, with Retry-After and RateLimit headers; another publisher and reads are not", async () => {
    // Reads limited too, with a bucket of their own the writes must not touch.
    await withRegistry({ ...WRITE_LIMITS, rateLimitRps: 1, rateLimitBurst: 50 }, async (registry) => {
      const client = clientFor(protocol, registry.url);
      try {
        const alice = await createPublisher();
        const bob = await createPublisher();
        const aliceToken = await registry.accessToken(alice.did, SCOPES);
        const bobToken = await registry.accessToken(bob.did, SCOPES);
        const aliceEntries = await entries(alice, `alice-${protocol}`, BURST + OVER);

        const answers = await Promise.all(aliceEntries.map((entry) => client.create(entry, aliceToken)));
        expect(codes(answers).every((code) => code === "ok" || code === "resource_exhausted")).toBe(true);
        expect(count(answers, "ok")).toBeGreaterThanOrEqual(BURST);
        expect(count(answers, "ok")).toBeLessThanOrEqual(BURST + 1);
        const created = answers.find((answer) => answer.code === "ok")!;
        if (protocol === "rest") expect(created.status).toBe(201);
        expect(created.headers.get("ratelimit-policy")).toBe(`"writes";q=${BURST};w=${WINDOW}`);
        expect(created.headers.get("ratelimit")).toMatch(/^"writes";r=\d+;t=\d+$/);
        expectRefusal(answers.find((answer) => answer.code === "resource_exhausted")!, "writes", protocol);

        // A revoke is a write of the same publisher: its bucket is still empty.
        const createdDid = aliceEntries[answers.indexOf(created)]!.entryDid as string;
        const revoke = await client.revoke(createdDid, await alice.revocation(createdDid, "superseded"), aliceToken);
        expectRefusal(revoke, "writes", protocol);

        const bobs = await client.create(await bob.entry(`bob-${protocol}`, "1.0.0"), bobToken);
        expect(bobs.code).toBe("ok");
        expect(bobs.headers.get("ratelimit")).toMatch(new RegExp(`^"writes";r=${BURST - 1};t=\\d+$`));

        const read = await client.resolve(createdDid);
        expect(read.code).toBe("ok");
        expect(read.headers.get("ratelimit-policy")).toBe(`"reads";q=50;w=50`);
        expect(read.headers.get("ratelimit")).toMatch(/^"reads";r=49;t=\d+$/);
      } finally {
        client.close();
      }
    });
  });

  it("a caller whose token does not verify draws from its address's write bucket, never from the subject it claims", async () => {
    await withRegistry(WRITE_LIMITS, async (registry) => {
      const client = clientFor(protocol, registry.url);
      try {
        const alice = await createPublisher();
        const aliceToken = await registry.accessToken(alice.did, SCOPES);
        // Alice's subject, signed with a key the issuer never had.
        const { privateKey } = await ed25519TestKey();
        const forged = await forgeToken(privateKey, "forged-kid", { claims: { iss: ISSUER, sub: alice.did } });
        const forgedEntries = await entries(alice, `forged-${protocol}`, BURST + OVER);

        const answers = await Promise.all(forgedEntries.map((entry) => client.create(entry, forged)));
        expect(codes(answers).every((code) => code === "unauthenticated" || code === "resource_exhausted")).toBe(true);
        expect(count(answers, "unauthenticated")).toBeGreaterThanOrEqual(BURST);
        expect(count(answers, "unauthenticated")).toBeLessThanOrEqual(BURST + 1);
        expectRefusal(answers.find((answer) => answer.code === "resource_exhausted")!, "writes", protocol);
        // The address's bucket, whatever the token says: none at all is refused as well.
        expectRefusal(await client.create(forgedEntries[0]!), "writes", protocol);

        // Alice's own bucket is untouched: a full burst of her writes goes through.
        const hers = await Promise.all((await entries(alice, `real-${protocol}`, BURST)).map((entry) => client.create(entry, aliceToken)));
        expect(codes(hers)).toEqual(Array(BURST).fill("ok"));
      } finally {
        client.close();
      }
    });
  });

  it("token issuance past its limit per client address is refused with Retry-After and RateLimit headers", async () => {
    await withRegistry(TOKEN_LIMITS, async (registry) => {
      const client = clientFor(protocol, registry.url);
      try {
        const root = await registry.rootToken((await createPublisher()).did, SCOPES);
        // Calls that fail count too: guessing root tokens is what this limit slows down.
        const answers = await Promise.all([
          ...Array.from({ length: BURST + OVER - 1 }, () => client.issueToken(root)),
          client.issueToken("not-a-root-token"),
        ]);
        expect(codes(answers).every((code) => ["ok", "unauthenticated", "resource_exhausted"].includes(code))).toBe(true);
        expect(answers.length - count(answers, "resource_exhausted")).toBeGreaterThanOrEqual(BURST);
        expect(answers.length - count(answers, "resource_exhausted")).toBeLessThanOrEqual(BURST + 1);
        const issued = answers.find((answer) => answer.code === "ok")!;
        expect(issued.headers.get("ratelimit-policy")).toBe(`"tokens";q=${BURST};w=${WINDOW}`);
        expectRefusal(answers.find((answer) => answer.code === "resource_exhausted")!, "tokens", protocol);
      } finally {
        client.close();
      }
    });
  });

  it("is off at 0: no refusals and no headers for writes or token requests", async () => {
    await withRegistry({ writeRateLimitRps: 0, tokenRateLimitRps: 0, writeRateLimitBurst: 1, tokenRateLimitBurst: 1 }, async (registry) => {
      const client = clientFor(protocol, registry.url);
      try {
        const publisher = await createPublisher();
        const token = await registry.accessToken(publisher.did, SCOPES);
        const writes = await Promise.all(
          (await entries(publisher, `unlimited-${protocol}`, 4)).map((entry) => client.create(entry, token)),
        );
        expect(codes(writes)).toEqual(Array(4).fill("ok"));
        expect(writes[0]!.headers.get("ratelimit")).toBeNull();
        const root = await registry.rootToken(publisher.did, SCOPES);
        const tokens = await Promise.all(Array.from({ length: 4 }, () => client.issueToken(root)));
        expect(codes(tokens)).toEqual(Array(4).fill("ok"));
        expect(tokens[0]!.headers.get("ratelimit")).toBeNull();
      } finally {
        client.close();
      }
    });
  });
});

describe("token issuance behind a trusted proxy", () => {
  it("each forwarded client has its own token bucket", async () => {
    await withRegistry({ ...TOKEN_LIMITS, trustProxy: ["loopback"] }, async (registry) => {
      const client = restCalls(registry.url);
      const root = await registry.rootToken((await createPublisher()).did, SCOPES);
      const alice = await Promise.all(
        Array.from({ length: BURST + OVER }, () => client.issueToken(root, { "x-forwarded-for": "198.51.100.1" })),
      );
      expect(count(alice, "resource_exhausted")).toBeGreaterThanOrEqual(OVER - 1);
      const bob = await Promise.all(Array.from({ length: BURST }, () => client.issueToken(root, { "x-forwarded-for": "198.51.100.2" })));
      expect(codes(bob)).toEqual(Array(BURST).fill("ok"));
    });
  });
});

describe("shared by replicas", () => {
  /** Half a publisher's burst through one registry, the rest and more through the other. */
  async function drainAcross(store: string, first: TestRegistry, second: TestRegistry): Promise<void> {
    const publisher = await createPublisher();
    const token = await first.accessToken(publisher.did, SCOPES);
    const [one, ...rest] = await entries(publisher, `replicated-${store}`, BURST + OVER);
    expect((await restCalls(first.url).create(one!, token)).code).toBe("ok");
    const fromSecond = await Promise.all(rest.map((entry) => restCalls(second.url).create(entry, token)));
    expect(count(fromSecond, "ok")).toBeLessThanOrEqual(BURST);
    expect(count(fromSecond, "resource_exhausted")).toBeGreaterThanOrEqual(OVER - 1);
  }

  it.runIf(usesPostgres())("two registries on one Postgres database share a publisher's write bucket", async () => {
    await withRegistry(WRITE_LIMITS, (first) => withRegistry(WRITE_LIMITS, (second) => drainAcross("postgres", first, second)));
  });

  it.runIf(testRedisUrl() !== undefined)("two registries using one Redis share a publisher's write bucket", async () => {
    const limits = { ...WRITE_LIMITS, redisUrl: testRedisUrl()! };
    await withRegistry(limits, (first) => withRegistry(limits, (second) => drainAcross("redis", first, second)));
  });
});

describe("settings", () => {
  it("defaults: 10 writes a second per publisher in bursts of 100, 1 token request a second per address in bursts of 10", () => {
    const config = loadConfig({});
    expect([config.writeRateLimitRps, config.writeRateLimitBurst]).toEqual([10, 100]);
    expect([config.tokenRateLimitRps, config.tokenRateLimitBurst]).toEqual([1, 10]);
  });

  it("rates may be fractions; anything but a non-negative number is refused, naming the variable", () => {
    expect(loadConfig({ TOKEN_RATE_LIMIT_RPS: "0.2", WRITE_RATE_LIMIT_RPS: "0" })).toMatchObject({
      tokenRateLimitRps: 0.2,
      writeRateLimitRps: 0,
    });
    for (const value of ["-1", "ten", "1e3", "0x10", "Infinity"]) {
      expect(() => loadConfig({ WRITE_RATE_LIMIT_RPS: value })).toThrow(
        new ConfigError(
          `WRITE_RATE_LIMIT_RPS must be a number of requests per second from 0 to 1000000 (0 turns the limit off), not "${value}"`,
        ),
      );
    }
    expect(() => loadConfig({ TOKEN_RATE_LIMIT_BURST: "0" })).toThrow(/TOKEN_RATE_LIMIT_BURST/);
  });
});
