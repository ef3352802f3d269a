import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAdminCredential } from "../../src/storage/admin-credential-file.js";
import { childEnv, freePort, runCli, startServerProcess, temporaryDirectory, type ServerProcess } from "../support/child-processes.js";
import { PROTOCOLS, registryClient, type CallResult, type Protocol } from "../support/protocol-clients.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, usesPostgres, type TestDatabase } from "../support/test-database.js";
import { expectClientError } from "./client-error.js";

/**
 * A leaked root token is revoked, but the thief already exchanged it for an access token that
 * has not expired. Every create and revoke with that access token is refused at once, as
 * unauthenticated naming the revoked root token, on every protocol, and nothing is written; the
 * subject's other root tokens keep working. With two processes on one Postgres, a revocation made
 * through either (or with the CLI) is honoured at once by the other, which had already accepted
 * the token.
 */

const SCOPES = ["registry.publish.skill"];

interface AdminApi {
  readonly url: string;
  readonly credential: string;
}

interface IssuedRootToken {
  readonly id: string;
  readonly token: string;
}

async function adminCall(admin: AdminApi, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${admin.url}/v1/admin/root-tokens${path}`, {
    method,
    headers: { authorization: `Bearer ${admin.credential}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json: any = await response.json();
  expect(response.status, JSON.stringify(json)).toBe(200);
  return json;
}

async function createRootToken(admin: AdminApi, subject: string): Promise<IssuedRootToken> {
  const created = await adminCall(admin, "POST", "", { subject, scopes: SCOPES, description: "revocation test" });
  return { id: created.rootToken.id, token: created.token };
}

async function revokeRootToken(admin: AdminApi, id: string): Promise<void> {
  const revoked = await adminCall(admin, "DELETE", `/${id}`);
  expect(revoked.rootToken.revokedAt).toBeDefined();
}

async function exchange(issuerUrl: string, rootToken: string): Promise<string> {
  const response = await fetch(`${issuerUrl}/v1/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ scopes: SCOPES, ttlSeconds: 3600 }),
  });
  const body: any = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body.accessToken;
}

function expectRevokedRootToken(result: CallResult, rootTokenId: string, label: string): void {
  expectClientError(result, "unauthenticated");
  expect(result.message, label).toContain(`root token ${rootTokenId} was revoked`);
  if (result.httpStatus !== undefined) expect(result.httpStatus, label).toBe(401);
}

/**
 * Publishes once with `accessToken` (so the serving process has verified it), and returns the
 * published entry; after the caller revokes the root token, `expectCutOff` checks a create and a
 * revoke are refused and that neither wrote anything.
 */
async function publishThenCheck(url: string, protocol: Protocol, publisher: TestPublisher, accessToken: string, name: string) {
  const client = registryClient(protocol, url);
  const published = await publisher.entry(name, "1.0.0");
  const created = await client.create(published, accessToken);
  client.close();
  expect(created.code, `${protocol}: ${created.message}`).toBe("ok");
  return {
    async expectCutOff(rootTokenId: string): Promise<void> {
      const cutOff = registryClient(protocol, url);
      try {
        const refusedEntry = await publisher.entry(name, "2.0.0");
        expectRevokedRootToken(await cutOff.create(refusedEntry, accessToken), rootTokenId, `${protocol} create`);
        const revocation = await publisher.revocation(published.entryDid, "the token was stolen");
        expectRevokedRootToken(await cutOff.revoke(published.entryDid, revocation, accessToken), rootTokenId, `${protocol} revoke`);
        expect((await cutOff.resolve(refusedEntry.entryDid)).code, `${protocol}: the refused create stored nothing`).toBe("not_found");
        const kept = await cutOff.resolve(published.entryDid);
        expect(kept.code).toBe("ok");
        expect(kept.body.status, `${protocol}: the refused revoke revoked nothing`).toBe("active");
      } finally {
        cutOff.close();
      }
    },
  };
}

describe("an access token whose root token was revoked, on one server", () => {
  let db: TestDatabase;
  let dataDir: { remove(): Promise<void> } | undefined;
  let registry: TestRegistry;
  let admin: AdminApi;

  beforeAll(async () => {
    db = await createTestDatabase();
    const directory = await temporaryDirectory("registry-revoked-root-");
    dataDir = directory;
    registry = await startTestRegistry(db.database, { adminApi: true, dataDir: directory.path });
    admin = { url: registry.url, credential: (await readAdminCredential(directory.path))! };
  });

  afterAll(async () => {
    await registry?.close();
    await db?.drop();
    await dataDir?.remove();
  });

  for (const protocol of PROTOCOLS) {
    it(`is refused at once for a create and a revoke over ${protocol}, and nothing is written`, async () => {
      const publisher = await createPublisher();
      const rootToken = await createRootToken(admin, publisher.did);
      const accessToken = await exchange(registry.url, rootToken.token);
      const check = await publishThenCheck(registry.url, protocol, publisher, accessToken, `stolen-${protocol}`);

      await revokeRootToken(admin, rootToken.id);
      await check.expectCutOff(rootToken.id);
    });
  }

  it("leaves the subject's other root tokens, and their access tokens, working", async () => {
    const publisher = await createPublisher();
    const [revoked, kept] = [await createRootToken(admin, publisher.did), await createRootToken(admin, publisher.did)];
    const keptAccess = await exchange(registry.url, kept.token);
    await exchange(registry.url, revoked.token);
    await revokeRootToken(admin, revoked.id);

    const client = registryClient("connect", registry.url);
    const entry = await publisher.entry("other-root-token", "1.0.0");
    const created = await client.create(entry, keptAccess);
    client.close();
    expect(created.code, created.message).toBe("ok");
  });
});

describe.skipIf(!usesPostgres())("an access token whose root token was revoked, across two processes on one Postgres", () => {
  const STARTUP_MS = 120_000;
  let db: TestDatabase;
  let dataDir: { remove(): Promise<void> } | undefined;
  let issuing: ServerProcess | undefined;
  let registryOnly: ServerProcess | undefined;
  let admin: AdminApi;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    db = await createTestDatabase();
    const directory = await temporaryDirectory("registry-revoked-root-");
    dataDir = directory;
    const issuingPort = await freePort();
    let registryPort = await freePort();
    while (registryPort === issuingPort) registryPort = await freePort();
    env = childEnv({ DATABASE_URL: db.url, AUTH_URL: `http://127.0.0.1:${issuingPort}` });
    // One process issues tokens and serves the admin API; the other only verifies tokens, through
    // the first one's JWKS, and shares nothing with it but the database.
    [issuing, registryOnly] = await Promise.all([
      startServerProcess(["--role", "all"], issuingPort, { ...env, ADMIN_API: "true", REGISTRY_DATA_DIR: directory.path }, STARTUP_MS),
      startServerProcess(["--role", "registry"], registryPort, env, STARTUP_MS),
    ]);
    admin = { url: issuing.url, credential: (await readAdminCredential(directory.path))! };
  }, 2 * STARTUP_MS);

  afterAll(async () => {
    await Promise.allSettled([issuing?.stop(), registryOnly?.stop()]);
    await db?.drop();
    await dataDir?.remove();
  });

  for (const protocol of PROTOCOLS) {
    it(`a revocation through the admin API of one process is honoured at once by the other, over ${protocol}`, async () => {
      const publisher = await createPublisher();
      const rootToken = await createRootToken(admin, publisher.did);
      const accessToken = await exchange(issuing!.url, rootToken.token);
      const check = await publishThenCheck(registryOnly!.url, protocol, publisher, accessToken, `stolen-${protocol}`);

      await revokeRootToken(admin, rootToken.id);
      await check.expectCutOff(rootToken.id);
    });
  }

  it("a revocation with the CLI is honoured at once by both processes", async () => {
    const publisher = await createPublisher();
    const rootToken = await createRootToken(admin, publisher.did);
    const accessToken = await exchange(issuing!.url, rootToken.token);
    const onIssuing = await publishThenCheck(issuing!.url, "rest", publisher, accessToken, "stolen-cli-issuing");
    const onRegistry = await publishThenCheck(registryOnly!.url, "grpc", publisher, accessToken, "stolen-cli-registry");

    const revoked = await runCli(["root-token", "revoke", rootToken.id], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    await onIssuing.expectCutOff(rootToken.id);
    await onRegistry.expectCutOff(rootToken.id);
  });
});
