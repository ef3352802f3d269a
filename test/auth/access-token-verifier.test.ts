import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SignJWT, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccessTokenVerifier, type AccessTokenVerifier } from "../../src/auth/access-token-verifier.js";
import type { AuthRepository } from "../../src/auth/auth-repository.js";
import { createKnexAuthRepository } from "../../src/storage/knex-auth-repository.js";
import { createTokenIssuer, type TokenIssuer } from "../../src/auth/token-issuer.js";
import { UnauthenticatedError, UnavailableError } from "../../src/errors.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import {
  AUDIENCE,
  decodeJwtPart,
  ed25519TestKey,
  forgeToken,
  ISSUER_URL,
  issuerConfig,
  mintRootToken,
  randomDid,
  unsignedToken,
  type Ed25519TestKey,
} from "./auth-fixtures.js";

/**
 * The issuer here uses a key the test holds (given as the environment would), so tokens can be
 * forged that differ from a genuine one in exactly one respect.
 */
let testDatabase: TestDatabase;
let repository: AuthRepository;
let issuerKey: Ed25519TestKey;
let kid: string;
let issuer: TokenIssuer;
let verifier: AccessTokenVerifier;

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  repository = createKnexAuthRepository(testDatabase.database.knex);
  issuerKey = await ed25519TestKey();
  issuer = createTokenIssuer({ repository, config: issuerConfig({ issuerPrivateJwk: issuerKey.privateJwk }) });
  kid = (await issuer.jwks())[0]!.kid;
  verifier = createAccessTokenVerifier({ issuer: ISSUER_URL, audience: AUDIENCE, keys: issuer.jwks });
});

afterAll(async () => {
  await testDatabase?.drop();
});

async function rejectionOf(authorization: string | null): Promise<Error> {
  const outcome = await verifier.authenticate(authorization).then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof Error)) throw new Error(`expected ${String(authorization)} to be refused`);
  return outcome;
}

async function expectUnauthenticated(token: string, message: RegExp): Promise<void> {
  const error = await rejectionOf(`Bearer ${token}`);
  expect(error).toBeInstanceOf(UnauthenticatedError);
  expect(error.message).toMatch(message);
  // No part of the token comes back in the message.
  for (const part of token.split(".").filter((piece) => piece.length > 8)) {
    expect(error.message).not.toContain(part);
  }
}

const now = () => Math.floor(Date.now() / 1000);

describe("authenticate", () => {
  it("accepts a hand-built token that matches what the issuer makes (control for the cases below)", async () => {
    const subject = randomDid();
    const token = await forgeToken(issuerKey.privateKey, kid, {
      claims: { sub: subject, scope: "registry.admin  registry.publish.skill" },
    });
    expect(await verifier.authenticate(`Bearer ${token}`)).toEqual({
      subject,
      scopes: ["registry.admin", "registry.publish.skill"],
    });
    // The scheme name is case-insensitive (RFC 7235).
    expect((await verifier.authenticate(`bearer ${token}`)).subject).toBe(subject);
  });

  it("accepts a token the issuer issued", async () => {
    const { token, record } = await mintRootToken(repository, ["registry.publish.agent"]);
    const issued = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.publish.agent"] });
    expect(await verifier.authenticate(`Bearer ${issued.accessToken}`)).toEqual({
      subject: record.subject,
      scopes: ["registry.publish.agent"],
    });
  });

  it("refuses a request without a token", async () => {
    for (const header of [null, "", "   "]) {
      const error = await rejectionOf(header);
      expect(error).toBeInstanceOf(UnauthenticatedError);
      expect(error.message).toMatch(/access token required/);
    }
  });

  it("refuses an authorization header that is not Bearer <token>", async () => {
    const token = await forgeToken(issuerKey.privateKey, kid);
    for (const header of [`Basic ${token}`, "Bearer", `Bearer ${token} more`, token, `Token ${token}`]) {
      const error = await rejectionOf(header);
      expect(error, header.slice(0, 12)).toBeInstanceOf(UnauthenticatedError);
      expect(error.message).not.toContain(token);
    }
  });

  it("refuses malformed tokens", async () => {
    const genuine = await forgeToken(issuerKey.privateKey, kid);
    const [header, payload, signature] = genuine.split(".") as [string, string, string];
    const malformed = [
      "abc",
      "a.b.c",
      `${header}.${payload}`,
      `${header}.!!!.${signature}`,
      `${Buffer.from("{not json").toString("base64url")}.${payload}.${signature}`,
      `${header}.${Buffer.from("[1,2]").toString("base64url")}.${signature}`,
      "x".repeat(10_000),
    ];
    for (const token of malformed) {
      const error = await rejectionOf(`Bearer ${token}`);
      expect(error, token.slice(0, 20)).toBeInstanceOf(UnauthenticatedError);
    }
  });

  it("refuses a token whose payload was altered after signing", async () => {
    const genuine = await forgeToken(issuerKey.privateKey, kid, { claims: { scope: "registry.publish.skill" } });
    const [header, payload, signature] = genuine.split(".") as [string, string, string];
    const claims = decodeJwtPart(genuine, 1);
    const altered = Buffer.from(JSON.stringify({ ...claims, scope: "registry.admin" })).toString("base64url");
    await expectUnauthenticated(`${header}.${altered}.${signature}`, /signature does not verify/);
    expect(payload).not.toBe(altered);
  });

  it("refuses an expired token, beyond 30 s of tolerated skew", async () => {
    const expired = await forgeToken(issuerKey.privateKey, kid, { claims: { iat: now() - 700, exp: now() - 31 } });
    await expectUnauthenticated(expired, /expired/);
    const withinSkew = await forgeToken(issuerKey.privateKey, kid, { claims: { iat: now() - 700, exp: now() - 20 } });
    expect((await verifier.authenticate(`Bearer ${withinSkew}`)).scopes).toEqual(["registry.publish.skill"]);
  });

  it("refuses a token it accepted before, once the token has expired", async () => {
    // The verifier remembers tokens it accepted; that memory must end with the token's life.
    let clockMs = Date.now();
    const clocked = createAccessTokenVerifier({
      issuer: ISSUER_URL,
      audience: AUDIENCE,
      keys: issuer.jwks,
      clock: () => new Date(clockMs),
    });
    const token = await forgeToken(issuerKey.privateKey, kid, { claims: { iat: now(), exp: now() + 60 } });
    expect((await clocked.authenticate(`Bearer ${token}`)).scopes).toEqual(["registry.publish.skill"]);
    expect((await clocked.authenticate(`Bearer ${token}`)).scopes).toEqual(["registry.publish.skill"]);
    clockMs += 95_000;
    await expect(clocked.authenticate(`Bearer ${token}`)).rejects.toThrow(UnauthenticatedError);
  });

  it("refuses a token issued in the future, beyond the tolerated skew", async () => {
    const early = await forgeToken(issuerKey.privateKey, kid, { claims: { iat: now() + 120, exp: now() + 600 } });
    await expectUnauthenticated(early, /not valid yet/);
  });

  it("refuses a token signed by another key, under our kid or its own", async () => {
    const stranger = await ed25519TestKey();
    await expectUnauthenticated(await forgeToken(stranger.privateKey, kid), /signature does not verify/);
    await expectUnauthenticated(await forgeToken(stranger.privateKey, "stranger-kid"), /unknown key/);
  });

  it('refuses alg "none"', async () => {
    await expectUnauthenticated(unsignedToken(kid), /EdDSA/);
  });

  it("refuses an HMAC token keyed with the public key (algorithm confusion)", async () => {
    const publicJwk = (await issuer.jwks())[0]! as JWK;
    const confused = await new SignJWT({ scope: "registry.admin", jti: "j", sub: randomDid() })
      .setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid })
      .setIssuer(ISSUER_URL)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(Buffer.from(publicJwk.x!, "base64url"));
    await expectUnauthenticated(confused, /EdDSA/);
  });

  it("refuses a token for another audience or from another issuer", async () => {
    await expectUnauthenticated(await forgeToken(issuerKey.privateKey, kid, { claims: { aud: "another-service" } }), /audience/);
    await expectUnauthenticated(await forgeToken(issuerKey.privateKey, kid, { claims: { iss: "https://evil.example" } }), /issuer/);
  });

  it('refuses a token whose typ is not "at+jwt"', async () => {
    await expectUnauthenticated(await forgeToken(issuerKey.privateKey, kid, { header: { typ: "JWT" } }), /typ/);
    await expectUnauthenticated(await forgeToken(issuerKey.privateKey, kid, { header: { typ: undefined } }), /typ/);
  });

  it("refuses a token without a kid", async () => {
    await expectUnauthenticated(await forgeToken(issuerKey.privateKey, kid, { header: { kid: undefined } }), /kid/);
  });

  it("requires exp, iat, sub, scope, jti and client_id", async () => {
    for (const claim of ["exp", "iat", "sub", "scope", "jti", "client_id"]) {
      const token = await forgeToken(issuerKey.privateKey, kid, { omit: [claim] });
      await expectUnauthenticated(token, new RegExp(`"${claim}"`));
    }
  });

  it("refuses claims of the wrong type", async () => {
    await expectUnauthenticated(
      await forgeToken(issuerKey.privateKey, kid, { claims: { scope: ["registry.admin"] as unknown as string } }),
      /scope/,
    );
    await expectUnauthenticated(await forgeToken(issuerKey.privateKey, kid, { claims: { exp: "tomorrow" as unknown as number } }), /exp/);
    for (const clientId of [7, "", "rt_XYZ", "regrt_secret"]) {
      await expectUnauthenticated(
        await forgeToken(issuerKey.privateKey, kid, { claims: { client_id: clientId } }),
        /"client_id" must be a root token id/,
      );
    }
  });
});

describe("with its root tokens in the same database", () => {
  let checking: AccessTokenVerifier;
  beforeAll(() => {
    checking = createAccessTokenVerifier({
      issuer: ISSUER_URL,
      audience: AUDIENCE,
      keys: issuer.jwks,
      findRootToken: (id) => repository.findRootTokenById(id),
    });
  });

  it("refuses a token it accepted before, once its root token is revoked, and only that root token's", async () => {
    const subject = randomDid();
    const [revoked, kept] = [
      await mintRootToken(repository, ["registry.admin"], subject),
      await mintRootToken(repository, ["registry.admin"], subject),
    ];
    const revokedAccess = (await issuer.issueToken(`Bearer ${revoked.token}`, { scopes: ["registry.admin"] })).accessToken;
    const keptAccess = (await issuer.issueToken(`Bearer ${kept.token}`, { scopes: ["registry.admin"] })).accessToken;
    await checking.authenticate(`Bearer ${revokedAccess}`);

    await repository.revokeRootToken(revoked.record.id, new Date("2026-01-02T03:04:05Z"));
    const error = await checking.authenticate(`Bearer ${revokedAccess}`).catch((refusal: unknown) => refusal);
    expect(error).toBeInstanceOf(UnauthenticatedError);
    expect((error as Error).message).toBe(
      `access token's root token ${revoked.record.id} was revoked at 2026-01-02T03:04:05.000Z; exchange an unrevoked root token for a new access token`,
    );
    expect(await checking.authenticate(`Bearer ${keptAccess}`)).toEqual({ subject, scopes: ["registry.admin"] });
  });

  it("accepts a token whose root token this database does not hold (an issuer on another database)", async () => {
    const subject = randomDid();
    const token = await forgeToken(issuerKey.privateKey, kid, { claims: { sub: subject, client_id: "rt_00000000000000ff" } });
    expect(await checking.authenticate(`Bearer ${token}`)).toEqual({ subject, scopes: ["registry.publish.skill"] });
  });

  it("is unavailable, not unauthenticated, when the root token cannot be read", async () => {
    const closed = await createTestDatabase();
    const closedRepository = createKnexAuthRepository(closed.database.knex);
    await closed.drop();
    const failing = createAccessTokenVerifier({
      issuer: ISSUER_URL,
      audience: AUDIENCE,
      keys: issuer.jwks,
      findRootToken: (id) => closedRepository.findRootTokenById(id),
    });
    const token = await forgeToken(issuerKey.privateKey, kid);
    await expect(failing.authenticate(`Bearer ${token}`)).rejects.toBeInstanceOf(UnavailableError);
  });
});

describe("with the JWKS fetched over HTTP", () => {
  interface JwksServer {
    readonly url: string;
    fetches: number;
    failWith: number | undefined;
    close(): Promise<void>;
  }

  async function startJwksServer(source: TokenIssuer): Promise<JwksServer> {
    const state = { fetches: 0, failWith: undefined as number | undefined };
    const server: Server = createServer((request, response) => {
      state.fetches++;
      if (request.url !== "/.well-known/jwks.json") {
        response.writeHead(404).end();
        return;
      }
      if (state.failWith !== undefined) {
        response.writeHead(state.failWith).end("down");
        return;
      }
      source.jwks({ reload: true }).then(
        (keys) => response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys })),
        () => response.writeHead(500).end(),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return Object.assign(state, {
      url: `http://127.0.0.1:${port}`,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    });
  }

  let databaseIssuer: TokenIssuer;
  let server: JwksServer;

  beforeAll(async () => {
    // A key from the database this time, so the issuer can rotate it.
    databaseIssuer = createTokenIssuer({ repository, config: issuerConfig() });
    server = await startJwksServer(databaseIssuer);
  });

  afterAll(async () => {
    await server?.close();
  });

  function remoteVerifier(cooldownMs: number) {
    return createAccessTokenVerifier({
      issuer: ISSUER_URL,
      audience: AUDIENCE,
      keys: new URL(`${server.url}/.well-known/jwks.json`),
      remote: { cooldownMs },
    });
  }

  async function issue(scopes: string[]) {
    const { token } = await mintRootToken(repository, ["registry.publish.*", "registry.admin"]);
    return (await databaseIssuer.issueToken(`Bearer ${token}`, { scopes })).accessToken;
  }

  it("verifies tokens with keys fetched once, and follows a rotation by refetching on an unknown kid", async () => {
    const remote = remoteVerifier(0);
    const oldToken = await issue(["registry.publish.skill"]);
    const fetchesBefore = server.fetches;

    expect((await remote.authenticate(`Bearer ${oldToken}`)).scopes).toEqual(["registry.publish.skill"]);
    expect((await remote.authenticate(`Bearer ${oldToken}`)).scopes).toEqual(["registry.publish.skill"]);
    expect(server.fetches - fetchesBefore).toBe(1);

    const newKey = await databaseIssuer.rotateSigningKey();
    const newToken = await issue(["registry.admin"]);
    expect(decodeJwtPart(newToken, 0).kid).toBe(newKey.kid);
    expect(newKey.kid).not.toBe(decodeJwtPart(oldToken, 0).kid);

    expect((await remote.authenticate(`Bearer ${newToken}`)).scopes).toEqual(["registry.admin"]);
    expect(server.fetches - fetchesBefore).toBe(2);
    // The retired key is still published, so tokens it signed keep working.
    expect((await remote.authenticate(`Bearer ${oldToken}`)).scopes).toEqual(["registry.publish.skill"]);
  });

  it("does not refetch for an unknown kid during the cooldown, and refuses the token", async () => {
    const remote = remoteVerifier(60_000);
    await remote.authenticate(`Bearer ${await issue(["registry.admin"])}`);
    const fetchesBefore = server.fetches;
    const stranger = await ed25519TestKey();
    for (let i = 0; i < 3; i++) {
      const error = await remote
        .authenticate(`Bearer ${await forgeToken(stranger.privateKey, `made-up-${i}`)}`)
        .catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(UnauthenticatedError);
    }
    expect(server.fetches).toBe(fetchesBefore);
  });

  it("is unavailable, not unauthenticated, when the JWKS cannot be fetched", async () => {
    const token = await issue(["registry.admin"]);
    server.failWith = 503;
    try {
      await expect(remoteVerifier(0).authenticate(`Bearer ${token}`)).rejects.toBeInstanceOf(UnavailableError);
    } finally {
      server.failWith = undefined;
    }
    const closed = await startJwksServer(databaseIssuer);
    const closedUrl = closed.url;
    await closed.close();
    const unreachable = createAccessTokenVerifier({
      issuer: ISSUER_URL,
      audience: AUDIENCE,
      keys: `${closedUrl}/.well-known/jwks.json`,
    });
    await expect(unreachable.authenticate(`Bearer ${token}`)).rejects.toBeInstanceOf(UnavailableError);
  });

  it("still refuses bad tokens without fetching keys", async () => {
    const fetchesBefore = server.fetches;
    const remote = remoteVerifier(0);
    await expect(remote.authenticate(`Bearer ${unsignedToken("k")}`)).rejects.toBeInstanceOf(UnauthenticatedError);
    await expect(remote.authenticate("Bearer a.b.c")).rejects.toBeInstanceOf(UnauthenticatedError);
    await expect(remote.authenticate(null)).rejects.toBeInstanceOf(UnauthenticatedError);
    expect(server.fetches).toBe(fetchesBefore);
  });
});
