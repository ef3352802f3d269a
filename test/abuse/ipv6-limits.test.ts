import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRegistryOnFreshDatabase, type FreshRegistry } from "../support/registry-fixture.js";

/**
 * One IPv6 host is usually given a whole /64: were limits kept per address, it could take a fresh
 * bucket for every one of its 2^64 addresses. Every per-address limit keys IPv6 clients by /64 (as
 * the connection cap does) and IPv4-mapped ones as their IPv4 address, so two addresses of one /64
 * share a bucket and two /64s do not. Clients are presented through X-Forwarded-For from a trusted
 * loopback proxy.
 */

const BURST = 3;
/** Buckets refill in half an hour: nothing comes back while a case runs. */
const RATE = BURST / 1_800;
const DID = "did:reg:main:skill:ipv6-limits";

let fresh: FreshRegistry;
let url: string;

beforeAll(async () => {
  fresh = await startRegistryOnFreshDatabase({
    rateLimitRps: RATE,
    rateLimitBurst: BURST,
    tokenRateLimitRps: RATE,
    tokenRateLimitBurst: BURST,
    trustProxy: ["loopback"],
  });
  url = fresh.registry.url;
});

afterAll(async () => {
  await fresh?.close();
});

/** A resolve (of an unknown DID: 404 draws a read too) as `client`; its status. */
const read = async (client: string) =>
  (await fetch(`${url}/v1/entries/${encodeURIComponent(DID)}`, { headers: { "x-forwarded-for": client } })).status;

/** A token request with a root token that is not one (401 draws a token request too); its status. */
const tokenRequest = async (client: string) =>
  (
    await fetch(`${url}/v1/tokens`, {
      method: "POST",
      headers: { "x-forwarded-for": client, authorization: "Bearer not-a-root-token", "content-type": "application/json" },
      body: JSON.stringify({ scopes: ["registry.publish.skill"] }),
    })
  ).status;

async function spend(call: (client: string) => Promise<number>, client: string, expected: number): Promise<void> {
  for (let i = 0; i < BURST; i++) expect(await call(client)).toBe(expected);
}

describe("reads", () => {
  it("two addresses of one /64 share a bucket; another /64 has its own", async () => {
    await spend(read, "2001:db8:a:1::1", 404);
    expect(await read("2001:db8:a:1:ffff:ffff:ffff:fffe")).toBe(429);
    expect(await read("2001:0DB8:000A:0001:0:0:0:77")).toBe(429);
    expect(await read("2001:db8:a:2::1")).toBe(404);
  });

  it("an IPv4-mapped address is its IPv4 address, in either notation", async () => {
    await spend(read, "192.0.2.40", 404);
    expect(await read("::ffff:192.0.2.40")).toBe(429);
    expect(await read("::ffff:c000:228")).toBe(429);
    expect(await read("192.0.2.41")).toBe(404);
  });
});

describe("token issuance", () => {
  it("two addresses of one /64 share a bucket; another /64 has its own", async () => {
    await spend(tokenRequest, "2001:db8:b:1::1", 401);
    expect(await tokenRequest("2001:db8:b:1:1234:5678:9abc:def0")).toBe(429);
    expect(await tokenRequest("2001:db8:b:2::1")).toBe(401);
  });
});
