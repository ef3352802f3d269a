import { randomBytes } from "node:crypto";
import { createLocalJWKSet, decodeProtectedHeader, generateKeyPair, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKnexAuthRepository } from "../../src/storage/knex-auth-repository.js";
import { PROTOCOLS, registryClient, type Protocol } from "../support/protocol-clients.js";
import { rawWriteClient } from "../support/raw-authorization-client.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { forgeToken, unsignedToken, type ForgeOptions as FixtureForgeOptions } from "./auth-fixtures.js";

/** What the fixture's server puts in (and expects of) its tokens. */
const ISSUER = "http://registry.test";
const AUDIENCE = "registry";
const HTTP_STATUS: Record<string, number> = {
  ok: 200,
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  already_exists: 409,
};

let db: TestDatabase;
let registry: TestRegistry;
/** The issuer's real signing key, read from the database, to forge otherwise-valid tokens. */
let issuerKey: { kid: string; privateKey: CryptoKey; publicX: string };
/** An Ed25519 key the issuer has never published. */
let strangerKey: CryptoKey;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  // The issuer creates its key on first use.
  const someone = await createPublisher();
  await registry.accessToken(someone.did, ["registry.publish.skill"]);
  const row = await db.database.knex("issuer_keys").whereNull("retired_at").first();
  const privateJwk: JWK = typeof row.private_jwk === "string" ? JSON.parse(row.private_jwk) : row.private_jwk;
  issuerKey = {
    kid: row.kid,
    privateKey: (await importJWK(privateJwk, "EdDSA")) as CryptoKey,
    publicX: privateJwk.x!,
  };
  strangerKey = (await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })).privateKey;
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

interface ForgeOptions extends FixtureForgeOptions {
  /** Signs with this key instead of the issuer's. */
  readonly key?: CryptoKey;
}

/** A token exactly as the issuer would make it for `subject`, with one thing changed. */
function forge(subject: string, { key, claims, ...rest }: ForgeOptions = {}): Promise<string> {
  return forgeToken(key ?? issuerKey.privateKey, issuerKey.kid, {
    ...rest,
    claims: { iss: ISSUER, aud: AUDIENCE, sub: subject, ...claims },
  });
}

function unsecuredJwt(subject: string): string {
  return unsignedToken(issuerKey.kid, { iss: ISSUER, sub: subject, scope: "registry.publish.* registry.admin" });
}

/** HS256 keyed with the issuer's public key: the classic algorithm-confusion forgery. */
async function hmacWithPublicKey(subject: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: "registry.publish.skill" })
    .setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: issuerKey.kid })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(subject)
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .setJti("hmac")
    .sign(Buffer.from(issuerKey.publicX, "base64url"));
}

/** Each way the authorization of a write can be missing or wrong; all must be unauthenticated. */
const UNAUTHENTICATED_CASES: ReadonlyArray<readonly [string, (subject: string) => Promise<string | undefined>]> = [
  ["no authorization header", async () => undefined],
  ['"Bearer garbage"', async () => "Bearer garbage"],
  ['"Basic x"', async () => "Basic x"],
  ['"Bearer" with no credential', async () => "Bearer"],
  ["a root token instead of an access token", async (subject) => `Bearer ${await registry.rootToken(subject, ["registry.publish.skill"])}`],
  [
    "a token that expired beyond the 30 s skew",
    async (subject) => {
      const now = Math.floor(Date.now() / 1000);
      return `Bearer ${await forge(subject, { claims: { iat: now - 1000, exp: now - 90 } })}`;
    },
  ],
  ["a token without exp", async (subject) => `Bearer ${await forge(subject, { omit: ["exp"] })}`],
  [
    "a token signed by another key under an unpublished kid",
    async (subject) => `Bearer ${await forge(subject, { key: strangerKey, header: { kid: "unpublished-kid" } })}`,
  ],
  ["a token signed by another key under the issuer's kid", async (subject) => `Bearer ${await forge(subject, { key: strangerKey })}`],
  ["a token with no kid", async (subject) => `Bearer ${await forge(subject, { header: { kid: undefined } })}`],
  ['an unsecured token (alg "none")', async (subject) => `Bearer ${unsecuredJwt(subject)}`],
  ["an HS256 token keyed with the issuer's public key", async (subject) => `Bearer ${await hmacWithPublicKey(subject)}`],
  ["a token for another audience", async (subject) => `Bearer ${await forge(subject, { claims: { aud: "someone-else" } })}`],
  ["a token from another issuer", async (subject) => `Bearer ${await forge(subject, { claims: { iss: "http://evil.test" } })}`],
  ['a token with typ "JWT"', async (subject) => `Bearer ${await forge(subject, { header: { typ: "JWT" } })}`],
  ["a token with no typ", async (subject) => `Bearer ${await forge(subject, { header: { typ: undefined } })}`],
  [
    "a token with a tampered payload",
    async (subject) => {
      const [header, , signature] = (await forge(subject)).split(".");
      const now = Math.floor(Date.now() / 1000);
      const payload = Buffer.from(
        JSON.stringify({ iss: ISSUER, aud: AUDIENCE, sub: subject, scope: "registry.admin", iat: now, exp: now + 600, jti: "t" }),
      ).toString("base64url");
      return `Bearer ${header}.${payload}.${signature}`;
    },
  ],
];

function expectOutcome(protocol: Protocol, result: { code: string; httpStatus?: number; message?: string }, code: string) {
  expect(result.code, result.message).toBe(code);
  if (protocol === "rest" && code !== "ok") expect(result.httpStatus).toBe(HTTP_STATUS[code]);
}

describe.each(PROTOCOLS)("write authorization over %s", (protocol) => {
  const name = `matrix-${protocol}`;
  const base = `did:reg:main:skill:${name}`;
  /** Published in beforeAll and never revoked: the target of every refused revocation. */
  const target = `${base}@1.0.0`;
  let publisher: TestPublisher;
  let other: TestPublisher;
  let token: string;
  let nextPatch = 100;
  const freshVersion = () => `2.0.${nextPatch++}`;

  beforeAll(async () => {
    publisher = await createPublisher();
    other = await createPublisher();
    token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
    const client = registryClient(protocol, registry.url);
    for (const version of ["1.0.0", "1.1.0", "1.2.0"]) {
      const created = await client.create(await publisher.entry(name, version), token);
      expect(created.code, created.message).toBe("ok");
    }
    client.close();
  });

  afterAll(async () => {
    // No refused write may have changed anything.
    const client = registryClient(protocol, registry.url);
    const resolved = await client.resolve(target);
    expect(resolved.body).toMatchObject({ status: "active" });
    client.close();
  });

  describe("unauthenticated", () => {
    it.each(UNAUTHENTICATED_CASES)("create with %s", async (_label, authorization) => {
      const client = rawWriteClient(protocol, registry.url);
      const entry = await publisher.entry(name, freshVersion());
      const result = await client.create(entry, await authorization(publisher.did));
      client.close();
      expectOutcome(protocol, result, "unauthenticated");
      expect(result.message).not.toContain("Bearer ey");
      const reader = registryClient(protocol, registry.url);
      expect((await reader.resolve(entry.entryDid)).code).toBe("not_found");
      reader.close();
    });

    it.each(UNAUTHENTICATED_CASES)("revoke with %s", async (_label, authorization) => {
      const client = rawWriteClient(protocol, registry.url);
      const result = await client.revoke(target, await publisher.revocation(target, "compromised"), await authorization(publisher.did));
      client.close();
      expectOutcome(protocol, result, "unauthenticated");
    });
  });

  describe("correctly forged tokens (controls for the cases above)", () => {
    it("accepts a token made with the issuer's key and the expected claims", async () => {
      const client = rawWriteClient(protocol, registry.url);
      const result = await client.create(await publisher.entry(name, freshVersion()), `Bearer ${await forge(publisher.did)}`);
      client.close();
      expectOutcome(protocol, result, "ok");
      if (protocol === "rest") expect(result.httpStatus).toBe(201);
    });

    it("accepts a token that expired within the 30 s clock skew", async () => {
      const now = Math.floor(Date.now() / 1000);
      const expiredRecently = await forge(publisher.did, { claims: { iat: now - 300, exp: now - 10 } });
      const client = rawWriteClient(protocol, registry.url);
      const result = await client.create(await publisher.entry(name, freshVersion()), `Bearer ${expiredRecently}`);
      client.close();
      expectOutcome(protocol, result, "ok");
    });
  });

  describe("authorization", () => {
    it("refuses a create whose token lacks registry.publish.<entryType>", async () => {
      const agentOnly = await registry.accessToken(publisher.did, ["registry.publish.agent"]);
      const client = registryClient(protocol, registry.url);
      const result = await client.create(await publisher.entry(name, freshVersion()), agentOnly);
      client.close();
      expectOutcome(protocol, result, "permission_denied");
      expect(result.message).toContain("registry.publish.skill");
    });

    it("refuses a create with registry.admin alone (moderation is not publishing)", async () => {
      const admin = await registry.accessToken(publisher.did, ["registry.admin"]);
      const client = registryClient(protocol, registry.url);
      const result = await client.create(await publisher.entry(name, freshVersion()), admin);
      client.close();
      expectOutcome(protocol, result, "permission_denied");
    });

    it("refuses a create whose token subject is not the entry's publisher", async () => {
      const othersToken = await registry.accessToken(other.did, ["registry.publish.skill"]);
      const client = registryClient(protocol, registry.url);
      const entry = await publisher.entry(name, freshVersion());
      const result = await client.create(entry, othersToken);
      expectOutcome(protocol, result, "permission_denied");
      expect((await client.resolve(entry.entryDid)).code).toBe("not_found");
      client.close();
    });

    it("publishes with registry.publish.*", async () => {
      const any = await registry.accessToken(publisher.did, ["registry.publish.*"]);
      const client = registryClient(protocol, registry.url);
      const version = freshVersion();
      const result = await client.create(await publisher.entry(name, version), any);
      client.close();
      expectOutcome(protocol, result, "ok");
      if (protocol === "rest") expect(result.httpStatus).toBe(201);
      expect(result.body.version).toBe(version);
    });

    it("refuses a revoke whose token lacks the entry type's publish scope", async () => {
      const agentOnly = await registry.accessToken(publisher.did, ["registry.publish.agent"]);
      const client = registryClient(protocol, registry.url);
      const result = await client.revoke(target, await publisher.revocation(target, "no scope"), agentOnly);
      client.close();
      expectOutcome(protocol, result, "permission_denied");
    });

    it("refuses a revoke by another publisher, even with a valid signature of its own", async () => {
      const othersToken = await registry.accessToken(other.did, ["registry.publish.skill"]);
      const client = registryClient(protocol, registry.url);
      const result = await client.revoke(target, await other.revocation(target, "not mine"), othersToken);
      client.close();
      expectOutcome(protocol, result, "permission_denied");
    });

    it("revokes with registry.publish.*", async () => {
      const any = await registry.accessToken(publisher.did, ["registry.publish.*"]);
      const did = `${base}@1.1.0`;
      const client = registryClient(protocol, registry.url);
      const result = await client.revoke(did, await publisher.revocation(did, "superseded"), any);
      client.close();
      expectOutcome(protocol, result, "ok");
      expect(result.body.entries).toEqual([expect.objectContaining({ entryDid: did, status: "revoked" })]);
    });

    it("lets registry.admin revoke another publisher's entry", async () => {
      const moderator = await createPublisher();
      const admin = await registry.accessToken(moderator.did, ["registry.admin"]);
      const did = `${base}@1.2.0`;
      const client = registryClient(protocol, registry.url);
      const result = await client.revoke(did, await moderator.revocation(did, "malware"), admin);
      client.close();
      expectOutcome(protocol, result, "ok");
      expect(result.body.entries).toEqual([expect.objectContaining({ entryDid: did, status: "revoked" })]);
    });
  });

  describe("the order of the checks", () => {
    it("answers an invalid entry without a token with 401, not 400", async () => {
      const client = registryClient(protocol, registry.url);
      const invalid = await publisher.entry(name, freshVersion(), { contentHash: "sha256:nope" });
      const result = await client.create(invalid, undefined);
      client.close();
      expectOutcome(protocol, result, "unauthenticated");
    });

    it("answers an invalid entry with a token lacking scope with 400 (validity before authorization)", async () => {
      const agentOnly = await registry.accessToken(publisher.did, ["registry.publish.agent"]);
      const client = registryClient(protocol, registry.url);
      const invalid = await publisher.entry(name, freshVersion(), { contentHash: "sha256:nope" });
      const result = await client.create(invalid, agentOnly);
      client.close();
      expectOutcome(protocol, result, "invalid_argument");
      expect(result.fields).toContain("contentHash");
    });

    it("answers a bad signature with a token of another subject with 400 (the signature is validity)", async () => {
      const othersToken = await registry.accessToken(other.did, ["registry.publish.skill"]);
      const client = registryClient(protocol, registry.url);
      const entry = await publisher.entry(name, freshVersion());
      const result = await client.create({ ...entry, description: "changed after signing" }, othersToken);
      client.close();
      expectOutcome(protocol, result, "invalid_argument");
      expect(result.message).toContain("signature does not verify");
    });

    it("answers a valid entry whose version exists, with a token lacking scope, with 403 (authorization before state)", async () => {
      const agentOnly = await registry.accessToken(publisher.did, ["registry.publish.agent"]);
      const client = registryClient(protocol, registry.url);
      const result = await client.create(await publisher.entry(name, "1.0.0"), agentOnly);
      client.close();
      expectOutcome(protocol, result, "permission_denied");
    });

    it("answers a valid entry whose version exists, with another subject's token, with 403", async () => {
      const othersToken = await registry.accessToken(other.did, ["registry.publish.skill"]);
      const client = registryClient(protocol, registry.url);
      const result = await client.create(await publisher.entry(name, "1.0.0"), othersToken);
      client.close();
      expectOutcome(protocol, result, "permission_denied");
    });

    it("answers the existing version with the right token with 409 (control)", async () => {
      const client = registryClient(protocol, registry.url);
      const result = await client.create(await publisher.entry(name, "1.0.0"), token);
      client.close();
      expectOutcome(protocol, result, "already_exists");
    });

    it("answers a revoke with an empty reason: 401 without a token, 400 with a token lacking scope", async () => {
      const agentOnly = await registry.accessToken(publisher.did, ["registry.publish.agent"]);
      const client = registryClient(protocol, registry.url);
      const body = await publisher.revocation(target, "");
      expectOutcome(protocol, await client.revoke(target, body, undefined), "unauthenticated");
      const refused = await client.revoke(target, body, agentOnly);
      client.close();
      expectOutcome(protocol, refused, "invalid_argument");
      expect(refused.fields).toContain("reason");
    });

    it("answers a revoke of a missing version with 403 for a token lacking scope, 404 for the right one", async () => {
      const agentOnly = await registry.accessToken(publisher.did, ["registry.publish.agent"]);
      const did = `${base}@9.9.9`;
      const client = registryClient(protocol, registry.url);
      const body = await publisher.revocation(did, "gone");
      expectOutcome(protocol, await client.revoke(did, body, agentOnly), "permission_denied");
      expectOutcome(protocol, await client.revoke(did, body, token), "not_found");
      client.close();
    });
  });
});

describe("POST /v1/tokens", () => {
  const issue = async (authorization: string | undefined, body: unknown) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await fetch(`${registry.url}/v1/tokens`, { method: "POST", headers, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as any };
  };
  const fieldsOf = (body: any): string[] => (body.details ?? []).flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field));

  it("returns {accessToken, tokenType, expiresAt, scopes, subject} and a token verifiable with the JWKS", async () => {
    const subject = (await createPublisher()).did;
    const root = await registry.rootToken(subject, ["registry.publish.skill", "registry.publish.agent"]);
    const before = Date.now();
    const { status, body } = await issue(`Bearer ${root}`, { scopes: ["registry.publish.skill"], ttlSeconds: 120 });
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(["accessToken", "expiresAt", "scopes", "subject", "tokenType"]);
    expect(body).toMatchObject({ tokenType: "Bearer", scopes: ["registry.publish.skill"], subject });
    expect(body.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    const expiresAt = Date.parse(body.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 119_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 121_000);

    const header = decodeProtectedHeader(body.accessToken);
    expect(header).toMatchObject({ typ: "at+jwt", alg: "EdDSA" });
    const jwks = (await (await fetch(`${registry.url}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
    expect(jwks.keys.map((k) => k.kid)).toContain(header.kid);
    for (const key of jwks.keys) expect(key).not.toHaveProperty("d");
    const { payload } = await jwtVerify(body.accessToken, createLocalJWKSet(jwks as { keys: JWK[] }), {
      algorithms: ["EdDSA"],
      typ: "at+jwt",
      issuer: ISSUER,
      audience: AUDIENCE,
    });
    expect(payload).toMatchObject({ sub: subject, scope: "registry.publish.skill" });
    expect(payload.exp! - payload.iat!).toBe(120);
    expect(typeof payload.jti).toBe("string");
  });

  it("defaults ttlSeconds to 900", async () => {
    const subject = (await createPublisher()).did;
    const root = await registry.rootToken(subject, ["registry.publish.skill"]);
    const { status, body } = await issue(`Bearer ${root}`, { scopes: ["registry.publish.skill"] });
    expect(status).toBe(200);
    const header = JSON.parse(Buffer.from(body.accessToken.split(".")[1], "base64url").toString());
    expect(header.exp - header.iat).toBe(900);
  });

  it("refuses a request without scopes with 400", async () => {
    const root = await registry.rootToken((await createPublisher()).did, ["registry.publish.skill"]);
    const { status, body } = await issue(`Bearer ${root}`, { scopes: [] });
    expect(status).toBe(400);
    expect(body.code).toBe("invalid_argument");
    expect(fieldsOf(body)).toContain("scopes");
  });

  it("refuses an unknown scope with 400 naming scopes[0]", async () => {
    const root = await registry.rootToken((await createPublisher()).did, ["registry.publish.*"]);
    const { status, body } = await issue(`Bearer ${root}`, { scopes: ["registry.publish.nothing"] });
    expect(status).toBe(400);
    expect(body.code).toBe("invalid_argument");
    expect(fieldsOf(body)).toContain("scopes[0]");
    expect(body.message).toContain("scopes[0]");
  });

  it("refuses a scope the root token may not grant with 403", async () => {
    const root = await registry.rootToken((await createPublisher()).did, ["registry.publish.skill"]);
    const { status, body } = await issue(`Bearer ${root}`, { scopes: ["registry.publish.skill", "registry.publish.agent"] });
    expect(status).toBe(403);
    expect(body.code).toBe("permission_denied");
    expect(body.message).toContain("registry.publish.agent");
    const wildcard = await registry.rootToken((await createPublisher()).did, ["registry.publish.*"]);
    expect((await issue(`Bearer ${wildcard}`, { scopes: ["registry.admin"] })).status).toBe(403);
    expect((await issue(`Bearer ${wildcard}`, { scopes: ["registry.publish.agent"] })).status).toBe(200);
  });

  it.each([0, 3601, -5])("refuses ttlSeconds %s with 400", async (ttlSeconds) => {
    const root = await registry.rootToken((await createPublisher()).did, ["registry.publish.skill"]);
    const { status, body } = await issue(`Bearer ${root}`, { scopes: ["registry.publish.skill"], ttlSeconds });
    expect(status).toBe(400);
    expect(fieldsOf(body)).toContain("ttlSeconds");
  });

  it("accepts ttlSeconds 1 and 3600", async () => {
    const root = await registry.rootToken((await createPublisher()).did, ["registry.publish.skill"]);
    for (const ttlSeconds of [1, 3600]) {
      expect((await issue(`Bearer ${root}`, { scopes: ["registry.publish.skill"], ttlSeconds })).status).toBe(200);
    }
  });

  it.each([
    ["no authorization header", undefined],
    ['"Basic x"', "Basic x"],
    ['"Bearer garbage"', "Bearer garbage"],
    ["an unknown root token", `Bearer regrt_${randomBytes(32).toString("base64url")}`],
  ])("answers %s with 401", async (_label, authorization) => {
    const { status, body } = await issue(authorization, { scopes: ["registry.publish.skill"] });
    expect(status).toBe(401);
    expect(body.code).toBe("unauthenticated");
  });

  it("authenticates the root token before validating the request (401 before 400)", async () => {
    const { status } = await issue("Bearer garbage", { scopes: [], ttlSeconds: 0 });
    expect(status).toBe(401);
  });

  it("refuses a revoked root token (401), which worked before revocation", async () => {
    const subject = (await createPublisher()).did;
    const root = await registry.rootToken(subject, ["registry.publish.skill"]);
    expect((await issue(`Bearer ${root}`, { scopes: ["registry.publish.skill"] })).status).toBe(200);
    const record = await db.database.knex("root_tokens").select("id").where({ subject_did: subject }).first();
    expect(await createKnexAuthRepository(db.database.knex).revokeRootToken(record.id)).toBe(true);
    const { status, body } = await issue(`Bearer ${root}`, { scopes: ["registry.publish.skill"] });
    expect(status).toBe(401);
    expect(body.code).toBe("unauthenticated");
  });
});
