import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccessTokenVerifier } from "../../src/auth/access-token-verifier.js";
import type { AuthRepository } from "../../src/auth/auth-repository.js";
import { createKnexAuthRepository } from "../../src/storage/knex-auth-repository.js";
import { createTokenIssuer, type TokenIssuer } from "../../src/auth/token-issuer.js";
import { InvalidArgumentError, PermissionDeniedError, UnauthenticatedError } from "../../src/errors.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { AUDIENCE, decodeJwtPart, ed25519TestKey, ISSUER_URL, issuerConfig, mintRootToken } from "./auth-fixtures.js";

let testDatabase: TestDatabase;
let repository: AuthRepository;
let issuer: TokenIssuer;

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  repository = createKnexAuthRepository(testDatabase.database.knex);
  issuer = createTokenIssuer({ repository, config: issuerConfig() });
});

afterAll(async () => {
  await testDatabase?.drop();
});

function localVerifier(tokenIssuer: TokenIssuer = issuer) {
  return createAccessTokenVerifier({
    issuer: ISSUER_URL,
    audience: AUDIENCE,
    keys: tokenIssuer.jwks,
  });
}

async function rejection(work: Promise<unknown>): Promise<Error> {
  const error = await work.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  if (!(error instanceof Error)) throw new Error("expected the call to fail, but it succeeded");
  return error;
}

describe("issueToken", () => {
  it("issues an at+jwt that the verifier turns back into the root token's subject and scopes", async () => {
    const { token, record } = await mintRootToken(repository, ["registry.publish.skill", "registry.admin"]);
    const before = Math.floor(Date.now() / 1000);

    const issued = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.publish.skill"] });

    expect(issued.tokenType).toBe("Bearer");
    expect(issued.subject).toBe(record.subject);
    expect(issued.scopes).toEqual(["registry.publish.skill"]);
    const header = decodeJwtPart(issued.accessToken, 0);
    const claims = decodeJwtPart(issued.accessToken, 1);
    expect(header).toMatchObject({ alg: "EdDSA", typ: "at+jwt" });
    expect(header.kid).toBe((await issuer.jwks())[0]!.kid);
    expect(claims).toMatchObject({
      iss: ISSUER_URL,
      aud: AUDIENCE,
      sub: record.subject,
      scope: "registry.publish.skill",
      client_id: record.id,
    });
    expect(typeof claims.jti).toBe("string");
    const iat = claims.iat as number;
    expect(iat).toBeGreaterThanOrEqual(before);
    expect(claims.exp).toBe(iat + 900);
    expect(issued.expiresAt).toBe(new Date((iat + 900) * 1000).toISOString());

    const principal = await localVerifier().authenticate(`Bearer ${issued.accessToken}`);
    expect(principal).toEqual({ subject: record.subject, scopes: ["registry.publish.skill"] });
  });

  it("gives every token its own jti", async () => {
    const { token } = await mintRootToken(repository, ["registry.admin"]);
    const first = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });
    const second = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });
    expect(decodeJwtPart(first.accessToken, 1).jti).not.toBe(decodeJwtPart(second.accessToken, 1).jti);
  });

  it("lets a registry.publish.* root token grant any publish scope, but not admin", async () => {
    const { token } = await mintRootToken(repository, ["registry.publish.*"]);
    const issued = await issuer.issueToken(`Bearer ${token}`, {
      scopes: ["registry.publish.agent", "registry.publish.skill", "registry.publish.*", "registry.publish.agent"],
      ttlSeconds: 60,
    });
    expect(issued.scopes).toEqual(["registry.publish.agent", "registry.publish.skill", "registry.publish.*"]);
    const principal = await localVerifier().authenticate(`Bearer ${issued.accessToken}`);
    expect(principal.scopes).toEqual(issued.scopes);

    const error = await rejection(issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] }));
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error.message).toContain("registry.admin");
  });

  it("refuses a scope the root token may not grant with permission_denied", async () => {
    const { token } = await mintRootToken(repository, ["registry.publish.skill"]);
    const error = await rejection(issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.publish.skill", "registry.publish.agent"] }));
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error.message).toContain("registry.publish.agent");
  });

  it("names an unknown scope by its index", async () => {
    const { token } = await mintRootToken(repository, ["registry.publish.*", "registry.admin"]);
    const error = await rejection(
      issuer.issueToken(`Bearer ${token}`, {
        scopes: ["registry.publish.skill", "registry.publish.widget", "registry.read"],
      }),
    );
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).violations.map((v) => v.field)).toEqual(["scopes[1]", "scopes[2]"]);
  });

  it("requires at least one scope", async () => {
    const { token } = await mintRootToken(repository, ["registry.admin"]);
    const error = await rejection(issuer.issueToken(`Bearer ${token}`, { scopes: [] }));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).violations.map((v) => v.field)).toEqual(["scopes"]);
  });

  it("accepts ttlSeconds from 1 to the maximum and refuses the rest", async () => {
    const { token } = await mintRootToken(repository, ["registry.admin"]);
    const ask = (ttlSeconds: number) => issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"], ttlSeconds });

    for (const ttlSeconds of [1, 3600]) {
      const claims = decodeJwtPart((await ask(ttlSeconds)).accessToken, 1);
      expect((claims.exp as number) - (claims.iat as number)).toBe(ttlSeconds);
    }
    for (const ttlSeconds of [0, -5, 3601, 1.5]) {
      const error = await rejection(ask(ttlSeconds));
      expect(error, `ttlSeconds ${ttlSeconds}`).toBeInstanceOf(InvalidArgumentError);
      expect((error as InvalidArgumentError).violations.map((v) => v.field)).toEqual(["ttlSeconds"]);
    }
  });

  it("defaults ttlSeconds to the configured maximum when that is below 900", async () => {
    const capped = createTokenIssuer({ repository, config: issuerConfig({ tokenMaxTtlSeconds: 300 }) });
    const { token } = await mintRootToken(repository, ["registry.admin"]);
    const claims = decodeJwtPart((await capped.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] })).accessToken, 1);
    expect((claims.exp as number) - (claims.iat as number)).toBe(300);
  });

  it("checks the root token before the request", async () => {
    const error = await rejection(issuer.issueToken(null, { scopes: [], ttlSeconds: 0 }));
    expect(error).toBeInstanceOf(UnauthenticatedError);
  });

  it("checks the request before the grant", async () => {
    const { token } = await mintRootToken(repository, ["registry.publish.skill"]);
    const error = await rejection(issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"], ttlSeconds: 99_999 }));
    expect(error).toBeInstanceOf(InvalidArgumentError);
  });

  it("refuses a missing, malformed or unknown root token without echoing it", async () => {
    const { token } = await mintRootToken(repository, ["registry.admin"]);
    const unknown = token.slice(0, -4) + (token.endsWith("AAAA") ? "BBBB" : "AAAA");
    for (const header of [null, "", "Bearer", `Basic ${token}`, `Bearer ${unknown}`, "Bearer regrt_short", `Bearer ${token} extra`]) {
      const error = await rejection(issuer.issueToken(header, { scopes: ["registry.admin"] }));
      expect(error, String(header)).toBeInstanceOf(UnauthenticatedError);
      expect(error.message).not.toContain(token.slice(6));
      expect(error.message).not.toContain(unknown.slice(6));
    }
  });

  it("refuses a revoked root token, and revoking reports whether the id exists", async () => {
    const { token, record } = await mintRootToken(repository, ["registry.admin"]);
    await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });

    expect(await repository.revokeRootToken(record.id)).toBe(true);
    expect(await repository.revokeRootToken("rt_0000000000000000")).toBe(false);

    const error = await rejection(issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] }));
    expect(error).toBeInstanceOf(UnauthenticatedError);
  });

  it("keeps the first revocation time when a root token is revoked again", async () => {
    const { record } = await mintRootToken(repository, ["registry.admin"]);
    const first = new Date("2030-01-01T00:00:00.000Z");
    await repository.revokeRootToken(record.id, first);
    await repository.revokeRootToken(record.id, new Date("2031-01-01T00:00:00.000Z"));
    const listed = (await repository.listRootTokens()).find((item) => item.id === record.id);
    expect(listed?.revokedAt?.toISOString()).toBe(first.toISOString());
  });

  it("stores a root token only as its SHA-256 hash", async () => {
    const { token, record } = await mintRootToken(repository, ["registry.admin"]);
    const { rows } = await testDatabase.database.knex.raw<{ rows: Record<string, unknown>[] }>("select * from root_tokens where id = ?", [
      record.id,
    ]);
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    const stored = JSON.stringify(row, (_key, value: unknown) => (Buffer.isBuffer(value) ? value.toString("hex") : value));
    const secret = token.slice("regrt_".length);
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain(Buffer.from(token).toString("hex"));
    const { createHash } = await import("node:crypto");
    expect((row.token_hash as Buffer).equals(createHash("sha256").update(token).digest())).toBe(true);
    // Nothing that reads root tokens hands out the hash either.
    const listed = (await repository.listRootTokens()).find((item) => item.id === record.id);
    expect(Object.keys(listed!)).not.toContain("tokenHash");
    expect(JSON.stringify(listed)).not.toContain((row.token_hash as Buffer).toString("hex"));
  });
});

describe("jwks", () => {
  it("publishes Ed25519 public keys with a thumbprint kid and nothing private", async () => {
    const keys = await issuer.jwks();
    expect(keys.length).toBeGreaterThanOrEqual(1);
    for (const key of keys) {
      expect(Object.keys(key).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x"]);
      expect(key).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
      const { calculateJwkThumbprint } = await import("jose");
      expect(key.kid).toBe(await calculateJwkThumbprint({ kty: key.kty, crv: key.crv, x: key.x }));
    }
  });
});

describe("a key given by the environment", () => {
  it("signs with that key, publishes only it, and stores no key", async () => {
    await issuer.jwks(); // the database issuer's key, made before counting
    const keyCount = async () => Number((await testDatabase.database.knex("issuer_keys").count({ count: "*" }))[0]!.count);
    const keysBefore = await keyCount();
    const { privateJwk } = await ed25519TestKey();
    const envIssuer = createTokenIssuer({ repository, config: issuerConfig({ issuerPrivateJwk: privateJwk }) });
    const { token, record } = await mintRootToken(repository, ["registry.admin"]);

    const issued = await envIssuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });

    const { calculateJwkThumbprint } = await import("jose");
    const kid = await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x: privateJwk.x! });
    expect(decodeJwtPart(issued.accessToken, 0).kid).toBe(kid);
    expect((await envIssuer.jwks()).map((key) => key.kid)).toEqual([kid]);
    expect(await keyCount()).toBe(keysBefore);
    const principal = await localVerifier(envIssuer).authenticate(`Bearer ${issued.accessToken}`);
    expect(principal.subject).toBe(record.subject);
    // Tokens signed with the database's key are refused where only the environment's key counts.
    const fromDatabaseKey = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });
    await expect(localVerifier(envIssuer).authenticate(`Bearer ${fromDatabaseKey.accessToken}`)).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
  });

  it("refuses a JWK whose public half does not belong to its private half", async () => {
    const one = await ed25519TestKey();
    const two = await ed25519TestKey();
    const envIssuer = createTokenIssuer({
      repository,
      config: issuerConfig({ issuerPrivateJwk: { ...one.privateJwk, x: two.privateJwk.x } }),
    });
    await expect(envIssuer.jwks()).rejects.toThrow(/not the public half/);
  });
});
