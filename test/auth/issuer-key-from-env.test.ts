import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { registryClient } from "../support/protocol-clients.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

let db: TestDatabase;
let registry: TestRegistry;
let publicX: string;

beforeAll(async () => {
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const jwk = await exportJWK(privateKey);
  publicX = jwk.x as string;
  // Read the way the service reads it: from the environment variable, through the config.
  const config = loadConfig({ AUTH_ISSUER_PRIVATE_JWK: JSON.stringify(jwk) });
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database, { issuerPrivateJwk: config.issuerPrivateJwk });
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

it("publishes the environment's key, signs with it, and keeps no key in the database", async () => {
  const jwks = (await (await fetch(`${registry.url}/.well-known/jwks.json`)).json()) as { keys: { x: string }[] };
  expect(jwks.keys.map((key) => key.x)).toEqual([publicX]);

  const publisher = await createPublisher();
  const token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  const created = await registryClient("rest", registry.url).create(await publisher.entry("env-key", "1.0.0"), token);
  expect(created.code).toBe("ok");

  const stored = await db.database.knex("issuer_keys").count<{ count: string }[]>("* as count");
  expect(Number(stored[0]?.count)).toBe(0);
});

it("refuses a value that is not an Ed25519 private JWK, at startup", () => {
  expect(() => loadConfig({ AUTH_ISSUER_PRIVATE_JWK: "not json" })).toThrow(ConfigError);
  expect(() => loadConfig({ AUTH_ISSUER_PRIVATE_JWK: JSON.stringify({ kty: "OKP", crv: "Ed25519", x: "abc" }) })).toThrow(
    /Ed25519 private key/,
  );
  expect(() => loadConfig({ AUTH_ISSUER_PRIVATE_JWK: JSON.stringify({ kty: "EC", crv: "P-256", x: "a", y: "b", d: "c" }) })).toThrow(
    ConfigError,
  );
});
