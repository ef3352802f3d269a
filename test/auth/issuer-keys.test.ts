import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccessTokenVerifier } from "../../src/auth/access-token-verifier.js";
import type { AuthRepository } from "../../src/auth/auth-repository.js";
import { createKnexAuthRepository } from "../../src/storage/knex-auth-repository.js";
import { ensureSigningKey, loadIssuerKeySet, rotateIssuerKey, type IssuerKeyOptions } from "../../src/auth/issuer-keys.js";
import { createTokenIssuer } from "../../src/auth/token-issuer.js";
import { UnauthenticatedError } from "../../src/errors.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { AUDIENCE, decodeJwtPart, ISSUER_URL, issuerConfig, mintRootToken } from "./auth-fixtures.js";

let testDatabase: TestDatabase;
let repository: AuthRepository;

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  repository = createKnexAuthRepository(testDatabase.database.knex);
});

// These tests are about the key table's whole state, so each starts with an empty one.
beforeEach(async () => {
  await testDatabase.database.knex("issuer_keys").delete();
});

afterAll(async () => {
  await testDatabase?.drop();
});

async function keyRows() {
  return testDatabase.database.knex("issuer_keys").select("kid", "retired_at").orderBy("created_at");
}

function keyOptions(clock?: () => Date): IssuerKeyOptions {
  return { repository, tokenMaxTtlSeconds: 3600, clock };
}

describe("ensureSigningKey", () => {
  it("creates one key on first use and reuses it afterwards", async () => {
    expect(await keyRows()).toHaveLength(0);
    const first = await ensureSigningKey(keyOptions());
    const second = await ensureSigningKey(keyOptions());
    expect(second.kid).toBe(first.kid);
    expect(await keyRows()).toEqual([{ kid: first.kid, retired_at: null }]);
  });

  it("creates exactly one key when many processes start at once", async () => {
    // Separate repositories (and on Postgres separate pooled connections) race on the empty table.
    const racers = Array.from({ length: 8 }, () =>
      ensureSigningKey({ ...keyOptions(), repository: createKnexAuthRepository(testDatabase.database.knex) }),
    );
    const kids = new Set((await Promise.all(racers)).map((key) => key.kid));
    expect(kids.size).toBe(1);
    const rows = await keyRows();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.kid).toBe([...kids][0]);
  });

  it("keeps private keys out of what it returns for publishing", async () => {
    const keySet = await loadIssuerKeySet(keyOptions());
    expect(JSON.stringify(keySet.publicKeys)).not.toMatch(/"d"/);
  });
});

describe("rotateIssuerKey", () => {
  it("makes a new key current and keeps the old one verifying until tokens it signed have expired", async () => {
    let now = new Date("2030-01-01T00:00:00.000Z");
    const clock = () => now;
    const original = await ensureSigningKey(keyOptions(clock));

    now = new Date("2030-01-01T01:00:00.000Z");
    const rotated = await rotateIssuerKey(keyOptions(clock));
    expect(rotated.kid).not.toBe(original.kid);

    const rows = await keyRows();
    expect(rows.filter((row) => row.retired_at === null).map((row) => row.kid)).toEqual([rotated.kid]);
    expect(rows.find((row) => row.kid === original.kid)?.retired_at?.toISOString()).toBe(now.toISOString());

    const published = async () => (await loadIssuerKeySet(keyOptions(clock))).publicKeys.map((key) => key.kid);
    expect(await published()).toEqual([rotated.kid, original.kid]);
    // Longest lifetime (3600 s) plus the 60 s margin after retirement, the old key is still out...
    now = new Date(Date.parse("2030-01-01T01:00:00.000Z") + 3659_000);
    expect(await published()).toEqual([rotated.kid, original.kid]);
    // ...and after it, gone.
    now = new Date(Date.parse("2030-01-01T01:00:00.000Z") + 3661_000);
    expect(await published()).toEqual([rotated.kid]);
  });

  it("publishes keys newest first over several rotations", async () => {
    const first = await ensureSigningKey(keyOptions());
    const second = await rotateIssuerKey(keyOptions());
    const third = await rotateIssuerKey(keyOptions());
    const keySet = await loadIssuerKeySet(keyOptions());
    expect(keySet.signingKey.kid).toBe(third.kid);
    expect(keySet.publicKeys.map((key) => key.kid)).toEqual([third.kid, second.kid, first.kid]);
  });

  it("ends with exactly one current key when two rotations run at once", async () => {
    await ensureSigningKey(keyOptions());
    const [one, two] = await Promise.all([rotateIssuerKey(keyOptions()), rotateIssuerKey(keyOptions())]);
    const current = (await keyRows()).filter((row) => row.retired_at === null);
    expect(current).toHaveLength(1);
    expect([one.kid, two.kid]).toContain(current[0]!.kid);
  });

  it("keeps old tokens verifying while new tokens use the new kid", async () => {
    const issuer = createTokenIssuer({ repository, config: issuerConfig() });
    const verifier = createAccessTokenVerifier({ issuer: ISSUER_URL, audience: AUDIENCE, keys: issuer.jwks });
    const { token } = await mintRootToken(repository, ["registry.admin"]);
    const before = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });

    const newKey = await issuer.rotateSigningKey();
    const after = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });

    expect(decodeJwtPart(after.accessToken, 0).kid).toBe(newKey.kid);
    expect(decodeJwtPart(before.accessToken, 0).kid).not.toBe(newKey.kid);
    expect((await issuer.jwks()).map((key) => key.kid)[0]).toBe(newKey.kid);
    await expect(verifier.authenticate(`Bearer ${before.accessToken}`)).resolves.toMatchObject({ scopes: ["registry.admin"] });
    await expect(verifier.authenticate(`Bearer ${after.accessToken}`)).resolves.toMatchObject({ scopes: ["registry.admin"] });
  });

  it("lets another process on the same database verify tokens signed with a key it has not seen yet", async () => {
    const processA = createTokenIssuer({ repository, config: issuerConfig() });
    const processB = createTokenIssuer({ repository, config: issuerConfig() });
    const verifierB = createAccessTokenVerifier({ issuer: ISSUER_URL, audience: AUDIENCE, keys: processB.jwks });
    const { token } = await mintRootToken(repository, ["registry.admin"]);
    // B loads (and caches) the key set before A rotates.
    const first = await processA.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });
    await verifierB.authenticate(`Bearer ${first.accessToken}`);

    await processA.rotateSigningKey();
    // Past B's cooldown for forced reloads, so the unknown kid makes it re-read the database.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const second = await processA.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });

    await expect(verifierB.authenticate(`Bearer ${second.accessToken}`)).resolves.toMatchObject({
      scopes: ["registry.admin"],
    });
  });

  it("refuses tokens once their key has aged out of the key set", async () => {
    let now = new Date();
    const clock = () => now;
    const issuer = createTokenIssuer({ repository, config: issuerConfig({ tokenMaxTtlSeconds: 60 }), clock });
    const { token } = await mintRootToken(repository, ["registry.admin"]);
    const old = await issuer.issueToken(`Bearer ${token}`, { scopes: ["registry.admin"] });
    await issuer.rotateSigningKey();

    // A second process whose clock is far past retirement plus the longest lifetime.
    now = new Date(now.getTime() + 10 * 60_000);
    const later = createTokenIssuer({ repository, config: issuerConfig({ tokenMaxTtlSeconds: 60 }), clock });
    const verifier = createAccessTokenVerifier({
      issuer: ISSUER_URL,
      audience: AUDIENCE,
      keys: later.jwks,
      // Isolate key expiry from token expiry: the token itself would also have expired by now.
      clock: () => new Date(Date.now()),
    });
    const error = await verifier.authenticate(`Bearer ${old.accessToken}`).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(UnauthenticatedError);
    expect((error as Error).message).toMatch(/unknown key/);
  });
});
