import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { registryClient } from "../support/protocol-clients.js";

/** The REST edge as a plain HTTP client sees it: routing, errors, limits, CORS, health, JWKS. */

let db: TestDatabase;
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;
let created: Record<string, any>;

const NAME = "edge-entry";
const BASE = `did:reg:main:skill:${NAME}`;
const ORIGIN = "https://app.example";
const MAX_BODY = 256 * 1024;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  publisher = await createPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  const response = await post("/v1/entries", await publisher.entry(NAME, "1.0.0"), token);
  expect(response.status).toBe(201);
  created = (await response.json()) as Record<string, any>;
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

function post(path: string, body: unknown, withToken?: string, extra: Record<string, string> = {}) {
  const headers: Record<string, string> = { "content-type": "application/json", ...extra };
  if (withToken !== undefined) headers.authorization = `Bearer ${withToken}`;
  return fetch(registry.url + path, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
}

async function json(response: Response): Promise<any> {
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return response.json();
}

describe("routing", () => {
  it("answers an unknown path with 404 and a JSON error", async () => {
    const response = await fetch(`${registry.url}/v1/nothing-here`);
    expect(response.status).toBe(404);
    const body = await json(response);
    expect(body).toEqual({ code: "not_found", message: expect.any(String), details: [] });
    expect(body.message).toContain("/v1/nothing-here");
  });

  it("answers 404 for a path under a known prefix that no route matches", async () => {
    const response = await fetch(`${registry.url}/v1/entries/${BASE}/versions/extra`);
    expect(response.status).toBe(404);
    expect((await json(response)).code).toBe("not_found");
  });

  it("answers GET /v1/tokens with 405 and Allow: POST", async () => {
    const response = await fetch(`${registry.url}/v1/tokens`);
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
    const body = await json(response);
    expect(body.code).toBe("unimplemented");
    expect(body.message).toContain("GET");
  });

  it("answers PUT /v1/entries/{did} with 405 and the methods the path allows", async () => {
    const response = await fetch(`${registry.url}/v1/entries/x`, { method: "PUT", body: "{}" });
    expect(response.status).toBe(405);
    const allow = (response.headers.get("allow") ?? "").split(/,\s*/).sort();
    expect(allow).toEqual(["DELETE", "GET"]);
  });

  it("answers GET /v1/entries (a POST-only path) with 405", async () => {
    const response = await fetch(`${registry.url}/v1/entries`);
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
  });

  it("resolves the same entry with %40, a literal @ and an encoded DID", async () => {
    const paths = [`/v1/entries/${BASE}%401.0.0`, `/v1/entries/${BASE}@1.0.0`, `/v1/entries/${encodeURIComponent(`${BASE}@1.0.0`)}`];
    for (const path of paths) {
      const response = await fetch(registry.url + path);
      expect(response.status, path).toBe(200);
      const body = await json(response);
      expect(body).toEqual(created);
    }
  });

  it("writes sequence as a JSON string, as proto3 JSON does for int64", async () => {
    const response = await fetch(`${registry.url}/v1/entries/${BASE}`);
    const text = await response.text();
    expect(text).toMatch(/"sequence":"[1-9][0-9]*"/);
    expect(typeof JSON.parse(text).sequence).toBe("string");
    const versions = await (await fetch(`${registry.url}/v1/entries/${BASE}/versions`)).text();
    expect(versions).toMatch(/"sequence":"[1-9][0-9]*"/);
  });

  it("answers HEAD on a GET route with the GET status and no body", async () => {
    const response = await fetch(`${registry.url}/v1/entries/${BASE}`, { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
    const missing = await fetch(`${registry.url}/v1/entries/did:reg:main:skill:absent`, { method: "HEAD" });
    expect(missing.status).toBe(404);
  });

  it("refuses an unknown query parameter naming it", async () => {
    const response = await fetch(`${registry.url}/v1/entries/${BASE}?colour=blue`);
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toContain("colour");
  });
});

describe("request bodies", () => {
  it("refuses invalid JSON with 400 invalid_argument", async () => {
    const response = await post("/v1/entries", '{"entryDid": ', token);
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toContain("JSON");
  });

  it("refuses an unknown JSON field, naming it", async () => {
    const entry = await publisher.entry("unknown-field", "1.0.0");
    const response = await post("/v1/entries", { ...entry, colour: "blue" }, token);
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toContain("colour");
    expect((await fetch(`${registry.url}/v1/entries/did:reg:main:skill:unknown-field`)).status).toBe(404);
  });

  it("refuses an unknown JSON field in a revoke body, naming it", async () => {
    const did = `${BASE}@1.0.0`;
    const revocation = await publisher.revocation(did, "x");
    const response = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ...revocation, force: true }),
    });
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toContain("force");
    expect(((await (await fetch(`${registry.url}/v1/entries/${BASE}`)).json()) as any).status).toBe("active");
  });

  it.each([
    ["an array", "[]"],
    ["a string", '"entry"'],
    ["a number", "42"],
    ["tags as a string", '{"tags": "a,b"}'],
    ["data as an array", '{"data": [1, 2]}'],
    ["a non-numeric sequence", '{"sequence": "abc"}'],
    ["isLatest as a string", '{"isLatest": "yes"}'],
    ["an empty object", "{}"],
    ["null", "null"],
  ])("answers a create body of %s with 400, never a 5xx", async (_, text) => {
    const response = await post("/v1/entries", text, token);
    expect(response.status).toBe(400);
    expect((await json(response)).code).toBe("invalid_argument");
  });

  it("refuses a body over 256 KiB with 413 resource_exhausted", async () => {
    const entry = await publisher.entry("too-big", "1.0.0", { description: "x".repeat(MAX_BODY) });
    const response = await post("/v1/entries", entry, token);
    expect(response.status).toBe(413);
    const body = await json(response);
    expect(body).toEqual({ code: "resource_exhausted", message: expect.stringContaining(String(MAX_BODY)), details: [] });
  });

  it("refuses a body over 256 KiB sent without a Content-Length (chunked)", async () => {
    const chunk = new TextEncoder().encode(`{"description":"${"x".repeat(MAX_BODY)}"}`);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk);
        controller.close();
      },
    });
    const response = await fetch(`${registry.url}/v1/entries`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    expect((await json(response)).code).toBe("resource_exhausted");
  });

  it.each(["connect", "grpc-web", "grpc"] as const)("refuses a body over 256 KiB over %s with resource_exhausted", async (protocol) => {
    const client = registryClient(protocol, registry.url);
    try {
      const entry = await publisher.entry("too-big-rpc", "1.0.0", { description: "x".repeat(MAX_BODY) });
      const result = await client.create(entry, token);
      expect(result.code).toBe("resource_exhausted");
    } finally {
      client.close();
    }
  });

  it("refuses a Connect request over 256 KiB with HTTP 429 and code resource_exhausted", async () => {
    const entry = await publisher.entry("too-big-connect", "1.0.0", { description: "x".repeat(MAX_BODY) });
    const response = await post("/registry.v1.RegistryService/CreateEntry", { entry }, token, { "connect-protocol-version": "1" });
    expect(response.status).toBe(429);
    expect(((await response.json()) as any).code).toBe("resource_exhausted");
  });

  it("accepts a body just under the limit", async () => {
    // Near 256 KiB in all, yet the entry itself then fails only on description's length.
    const entry = await publisher.entry("under-limit", "1.0.0", { description: "x".repeat(MAX_BODY - 4096) });
    const response = await post("/v1/entries", entry, token);
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body.details[0].fieldViolations.map((v: any) => v.field)).toEqual(["description"]);
  });
});

describe("the error body", () => {
  it("is {code, message, details} with a google.rpc.BadRequest detail in its JSON form", async () => {
    const entry = await publisher.entry("bad-entry", "1.0.0", { bondAmount: "100", tags: ["Upper"] });
    const response = await post("/v1/entries", entry, token);
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body).toEqual({
      code: "invalid_argument",
      message: expect.stringContaining("bondAmount"),
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.BadRequest",
          fieldViolations: [
            { field: "tags[0]", description: expect.any(String) },
            { field: "bondAmount", description: expect.any(String) },
          ],
        },
      ],
    });
    expect(body.message).toContain("tags[0]");
  });

  it("has no details for errors without field violations, with the status of the Connect code", async () => {
    const unauthenticated = await post("/v1/entries", await publisher.entry("no-token", "1.0.0"));
    expect(unauthenticated.status).toBe(401);
    expect(await json(unauthenticated)).toEqual({ code: "unauthenticated", message: expect.any(String), details: [] });

    const duplicate = await post("/v1/entries", await publisher.entry(NAME, "1.0.0"), token);
    expect(duplicate.status).toBe(409);
    expect(await json(duplicate)).toEqual({ code: "already_exists", message: expect.stringContaining(`${BASE}@1.0.0`), details: [] });

    const missing = await fetch(`${registry.url}/v1/entries/did:reg:main:skill:absent`);
    expect(missing.status).toBe(404);
    expect(await json(missing)).toEqual({ code: "not_found", message: expect.any(String), details: [] });
  });
});

describe("CORS", () => {
  const preflightHeaders = (method: string, requestHeaders: string) => ({
    origin: ORIGIN,
    "access-control-request-method": method,
    "access-control-request-headers": requestHeaders,
  });

  it.each([
    ["a REST path", "/v1/entries", "POST", "authorization,content-type"],
    ["a REST path with a DID", `/v1/entries/${BASE}`, "DELETE", "authorization,content-type"],
    ["a Connect path", "/registry.v1.RegistryService/CreateEntry", "POST", "authorization,content-type,connect-protocol-version"],
    ["a gRPC-Web path", "/registry.v1.RegistryService/CreateEntry", "POST", "authorization,content-type,x-grpc-web,x-user-agent"],
  ])("answers a preflight for %s with 204 allowing Authorization", async (_, path, method, requested) => {
    const response = await fetch(registry.url + path, { method: "OPTIONS", headers: preflightHeaders(method, requested) });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    const allowedHeaders = (response.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/,\s*/);
    for (const header of requested.split(",")) expect(allowedHeaders).toContain(header);
    const allowedMethods = (response.headers.get("access-control-allow-methods") ?? "").split(/,\s*/);
    expect(allowedMethods).toContain(method);
    expect(response.headers.get("access-control-max-age")).toMatch(/^[1-9][0-9]*$/);
  });

  it("lets a cross-origin GET read the response and its rate-limit headers", async () => {
    const response = await fetch(`${registry.url}/v1/entries/${BASE}`, { headers: { origin: ORIGIN } });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(response.headers.get("vary")).toMatch(/Origin/);
    const exposed = (response.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/,\s*/);
    expect(exposed).toEqual(expect.arrayContaining(["retry-after", "ratelimit", "ratelimit-policy"]));
    expect(((await response.json()) as any).entryDid).toBe(`${BASE}@1.0.0`);
  });

  it("adds CORS headers to error responses too", async () => {
    const response = await fetch(`${registry.url}/v1/entries/did:reg:main:skill:absent`, { headers: { origin: ORIGIN } });
    expect(response.status).toBe(404);
    expect(response.headers.get("access-control-allow-origin")).toBe(ORIGIN);
  });

  it("sends no CORS headers to a request without Origin", async () => {
    const response = await fetch(`${registry.url}/v1/entries/${BASE}`);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("allows only the configured origins when CORS_ORIGINS lists them", async () => {
    const restricted = await startTestRegistry(db.database, { corsOrigins: [ORIGIN] });
    try {
      const allowed = await fetch(`${restricted.url}/v1/entries/${BASE}`, { headers: { origin: ORIGIN } });
      expect(allowed.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      const other = await fetch(`${restricted.url}/v1/entries/${BASE}`, { headers: { origin: "https://evil.example" } });
      expect(other.status).toBe(200);
      expect(other.headers.get("access-control-allow-origin")).toBeNull();
      const preflight = await fetch(`${restricted.url}/v1/entries`, {
        method: "OPTIONS",
        headers: preflightHeaders("POST", "authorization"),
      });
      expect(preflight.status).toBe(204);
      const refused = await fetch(`${restricted.url}/v1/entries`, {
        method: "OPTIONS",
        headers: { ...preflightHeaders("POST", "authorization"), origin: "https://evil.example" },
      });
      expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await restricted.close();
    }
  });
});

describe("health and keys", () => {
  it("answers /healthz and /readyz with 200", async () => {
    const health = await fetch(`${registry.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await json(health)).toEqual({ status: "ok" });
    const ready = await fetch(`${registry.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await json(ready)).toEqual({ status: "ready" });
    expect((await fetch(`${registry.url}/healthz`, { method: "HEAD" })).status).toBe(200);
  });

  it("publishes the issuer's Ed25519 keys at /.well-known/jwks.json", async () => {
    const response = await fetch(`${registry.url}/.well-known/jwks.json`);
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body.keys.length).toBeGreaterThanOrEqual(1);
    for (const key of body.keys) {
      expect(key).toMatchObject({
        kty: "OKP",
        crv: "Ed25519",
        kid: expect.stringMatching(/.+/),
        x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      });
      expect(Buffer.from(key.x, "base64url")).toHaveLength(32);
      expect(key).not.toHaveProperty("d");
    }
    // The key that signed our access token is listed under the token's kid.
    const header = JSON.parse(Buffer.from(token.split(".")[0] as string, "base64url").toString("utf8"));
    expect(header).toMatchObject({ alg: "EdDSA", typ: "at+jwt" });
    expect(body.keys.map((k: any) => k.kid)).toContain(header.kid);
  });

  it("answers POST /.well-known/jwks.json with 405", async () => {
    const response = await post("/.well-known/jwks.json", {});
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET");
  });
});
