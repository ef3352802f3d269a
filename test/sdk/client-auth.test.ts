import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistryClient, generateKeyPair, RegistryClientError, type EntryInput, type KeyPair } from "../../src/sdk/node.js";
import type { TestDatabase } from "../support/test-database.js";
import { startRegistryOnFreshDatabase, startTestRegistry, type FreshRegistry, type TestRegistry } from "../support/registry-fixture.js";

let fresh: FreshRegistry;
let db: TestDatabase;
let registry: TestRegistry;

beforeAll(async () => {
  fresh = await startRegistryOnFreshDatabase();
  ({ db, registry } = fresh);
});

afterAll(() => fresh?.close());

function entryFields(key: KeyPair, name: string, version: string, entryType = "skill"): EntryInput {
  return {
    entryDid: `did:reg:main:${entryType}:${name}@${version}`,
    entryType,
    version,
    publisherDid: key.did,
    publishedAt: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
    contentHash: `sha256:${"ef".repeat(32)}`,
  };
}

/** A fetch that counts the token exchanges going through it, and the scopes each asked for. */
function countingFetch() {
  const exchanges: string[][] = [];
  const fetcher: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.endsWith("/auth.v1.TokenService/IssueToken")) {
      // Connect-Web sends the JSON request as bytes.
      const body = new TextDecoder().decode(init?.body as Uint8Array);
      exchanges.push((JSON.parse(body) as { scopes: string[] }).scopes);
    }
    return fetch(input, init);
  };
  return { fetcher, exchanges };
}

async function failure(promise: Promise<unknown>): Promise<RegistryClientError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(RegistryClientError);
  return error as RegistryClientError;
}

describe("SDK auth", () => {
  it("exchanges the root token once, reuses the access token, and refreshes it before it expires", async () => {
    const key = await generateKeyPair();
    const rootToken = await registry.rootToken(key.did, ["registry.publish.*"]);
    const { fetcher, exchanges } = countingFetch();
    let now = Date.now();
    const client = createRegistryClient({
      baseUrl: registry.url,
      fetch: fetcher,
      clock: () => now,
      auth: { rootToken, ttlSeconds: 60 },
    });

    await client.publish(entryFields(key, "refreshed", "1.0.0"), { key });
    await client.publish(entryFields(key, "refreshed", "1.0.1"), { key });
    expect(exchanges).toEqual([["registry.publish.skill"]]);

    // A 60 s token is refreshed once a fifth of its life is left (48 s in), before it could fail.
    now += 47_000;
    await client.publish(entryFields(key, "refreshed", "1.0.2"), { key });
    expect(exchanges).toHaveLength(1);
    now += 2_000;
    await client.publish(entryFields(key, "refreshed", "1.0.3"), { key });
    expect(exchanges).toHaveLength(2);

    // Another entry type needs another scope, so another token.
    await client.publish(entryFields(key, "refreshed", "1.0.0", "agent"), { key });
    expect(exchanges).toEqual([["registry.publish.skill"], ["registry.publish.skill"], ["registry.publish.agent"]]);
  });

  it("shares one exchange among writes that need a token at the same time", async () => {
    const key = await generateKeyPair();
    const rootToken = await registry.rootToken(key.did, ["registry.publish.skill"]);
    const { fetcher, exchanges } = countingFetch();
    const client = createRegistryClient({ baseUrl: registry.url, fetch: fetcher, auth: { rootToken } });

    const stored = await Promise.all(
      ["1.0.0", "1.1.0", "1.2.0"].map((version) => client.publish(entryFields(key, "concurrent", version), { key })),
    );
    expect(stored.map((e) => e.status)).toEqual(["active", "active", "active"]);
    expect(exchanges).toHaveLength(1);
  });

  it("asks for the configured scopes instead, e.g. registry.admin to moderate another publisher's entry", async () => {
    const publisher = await generateKeyPair();
    const moderator = await generateKeyPair();
    const publishing = createRegistryClient({
      baseUrl: registry.url,
      auth: await registry.accessToken(publisher.did, ["registry.publish.skill"]),
    });
    await publishing.publish(entryFields(publisher, "moderated", "1.0.0"), { key: publisher });

    const adminRoot = await registry.rootToken(moderator.did, ["registry.admin"]);
    const moderating = createRegistryClient({ baseUrl: registry.url, auth: { rootToken: adminRoot, scopes: ["registry.admin"] } });
    const [revoked] = await moderating.revoke("did:reg:main:skill:moderated@1.0.0", { reason: "malware", key: moderator });
    expect(revoked).toMatchObject({ status: "revoked", revocationReason: "malware" });
  });

  it("reports a root token that may not grant the scope as permission_denied, a write without a token as unauthenticated, and takes a token per write", async () => {
    const key = await generateKeyPair();
    const rootToken = await registry.rootToken(key.did, ["registry.publish.agent"]);
    const limited = createRegistryClient({ baseUrl: registry.url, auth: { rootToken } });
    expect((await failure(limited.publish(entryFields(key, "denied", "1.0.0"), { key }))).code).toBe("permission_denied");

    const anonymous = createRegistryClient({ baseUrl: registry.url, transport: "grpc-web" });
    expect((await failure(anonymous.publish(entryFields(key, "anonymous", "1.0.0"), { key }))).code).toBe("unauthenticated");
    // A token given to one write is used for it alone.
    const token = await registry.accessToken(key.did, ["registry.publish.skill"]);
    expect((await anonymous.publish(entryFields(key, "anonymous", "1.0.0"), { key, token })).status).toBe("active");
    expect((await failure(anonymous.revoke("did:reg:main:skill:anonymous", { reason: "no token", key }))).code).toBe("unauthenticated");
    expect((await anonymous.revoke("did:reg:main:skill:anonymous", { reason: "with token", key, token }))[0]?.status).toBe("revoked");
  });

  it("refuses a key pair that is not the entry's publisher before sending anything", async () => {
    const key = await generateKeyPair();
    const other = await generateKeyPair();
    const { fetcher, exchanges } = countingFetch();
    const client = createRegistryClient({
      baseUrl: registry.url,
      fetch: fetcher,
      auth: { rootToken: await registry.rootToken(key.did, ["registry.publish.skill"]) },
    });
    const error = await failure(client.publish(entryFields(key, "mismatch", "1.0.0"), { key: other }));
    expect(error.code).toBe("invalid_argument");
    expect(error.violations.map((v) => v.field)).toEqual(["publisherDid"]);
    expect(exchanges).toHaveLength(0);
  });
});

describe("SDK errors under a rate limit", () => {
  let limited: TestRegistry;

  beforeAll(async () => {
    limited = await startTestRegistry(db.database, { rateLimitRps: 0.01, rateLimitBurst: 1 });
  });

  afterAll(() => limited?.close());

  it.each(["connect", "grpc"] as const)("carry the RetryInfo delay over %s", async (transport) => {
    const client = createRegistryClient({ baseUrl: limited.url, transport });
    try {
      // The burst of one is spent by the first read of whichever transport runs first.
      const errors: RegistryClientError[] = [];
      for (let i = 0; i < 2; i++) {
        await client.resolve("did:reg:main:skill:nothing@1.0.0").catch((error: RegistryClientError) => errors.push(error));
      }
      const exhausted = errors.find((error) => error.code === "resource_exhausted");
      expect(exhausted).toBeInstanceOf(RegistryClientError);
      expect(exhausted!.retryAfterMs).toBeGreaterThanOrEqual(1000);
    } finally {
      client.close();
    }
  });
});

describe("SDK options", () => {
  it("sends the fixed headers and the deadline on every call, and the write's own token over a fixed authorization", async () => {
    const key = await generateKeyPair();
    const seen: Headers[] = [];
    const client = createRegistryClient({
      baseUrl: registry.url,
      headers: { "x-client": "sdk-test", Authorization: "Bearer stale" },
      timeoutMs: 5_000,
      auth: await registry.accessToken(key.did, ["registry.publish.skill"]),
      fetch: async (input, init) => {
        seen.push(new Headers(init?.headers));
        return fetch(input, init);
      },
    });
    await client.publish(entryFields(key, "headers", "1.0.0"), { key });
    await client.resolve("did:reg:main:skill:headers");
    expect(seen.map((headers) => headers.get("x-client"))).toEqual(["sdk-test", "sdk-test"]);
    expect(seen.map((headers) => headers.get("connect-timeout-ms"))).toEqual(["5000", "5000"]);
    expect(seen[0]!.get("authorization")).toMatch(/^Bearer ey/);
  });

  it("refuses gRPC from the browser entry, which cannot read HTTP/2 trailers", async () => {
    const browser = await import("../../src/sdk/index.js");
    expect(() => browser.createRegistryClient({ baseUrl: registry.url, transport: "grpc" as never })).toThrow(/Node entry/);
  });
});
