import http from "node:http";
import { generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv, freePort, runCli, startServerProcess, type ServerProcess } from "../support/child-processes.js";
import { createPublisher, type TestPublisher } from "../support/registry-fixture.js";
import { createTestDatabase, usesPostgres, type TestDatabase, seededDataDirectory } from "../support/test-database.js";

/**
 * `registry serve --role auth` and `--role registry` as two real processes. On Postgres both use
 * one fresh database; on PGlite each has its own data directory, which works because the registry
 * role verifies tokens only through the issuer's JWKS.
 */

const STARTUP_MS = 120_000;
// Far longer than a loaded machine takes to close a database and exit, so an exit well inside it
// tells "nothing held shutdown" apart from "held until the grace ran out" without a tight timing.
const SHUTDOWN_GRACE_MS = 30_000;

let db: TestDatabase | undefined;
const directories: Array<{ remove(): Promise<void> }> = [];
let auth: ServerProcess | undefined;
let registry: ServerProcess | undefined;
let publisher: TestPublisher;
let rootToken: string;

async function createRootToken(env: NodeJS.ProcessEnv): Promise<string> {
  const created = await runCli(["root-token", "create", "--subject", publisher.did, "--scopes", "registry.publish.skill"], env);
  expect(created.code, created.stderr).toBe(0);
  return created.stdout.trim();
}

beforeAll(async () => {
  publisher = await createPublisher();
  const authPort = await freePort();
  let registryPort = await freePort();
  while (registryPort === authPort) registryPort = await freePort();
  const authUrl = `http://127.0.0.1:${authPort}`;

  let authEnv: NodeJS.ProcessEnv;
  let registryEnv: NodeJS.ProcessEnv;
  if (usesPostgres()) {
    db = await createTestDatabase();
    authEnv = registryEnv = childEnv({ DATABASE_URL: db.url, AUTH_URL: authUrl, SHUTDOWN_GRACE_MS: `${SHUTDOWN_GRACE_MS}` });
  } else {
    const authDir = await seededDataDirectory("registry-auth-");
    const registryDir = await seededDataDirectory("registry-registry-");
    directories.push(authDir, registryDir);
    const grace = { SHUTDOWN_GRACE_MS: `${SHUTDOWN_GRACE_MS}` };
    authEnv = childEnv({ REGISTRY_DATA_DIR: authDir.path, AUTH_URL: authUrl, ...grace });
    registryEnv = childEnv({ REGISTRY_DATA_DIR: registryDir.path, AUTH_URL: authUrl, ...grace });
    // PGlite is one process's database: the CLI runs before the auth process opens the directory.
    rootToken = await createRootToken(authEnv);
  }
  [auth, registry] = await Promise.all([
    startServerProcess(["--role", "auth"], authPort, authEnv, STARTUP_MS),
    startServerProcess(["--role", "registry"], registryPort, registryEnv, STARTUP_MS),
  ]);
  // On Postgres the CLI works on the database while the servers run against it.
  if (usesPostgres()) rootToken = await createRootToken(authEnv);
}, 2 * STARTUP_MS);

afterAll(async () => {
  // A safety net: the last test stops both processes and checks how they exit.
  await Promise.allSettled([auth?.stop(), registry?.stop()]);
  await db?.drop();
  for (const directory of directories) await directory.remove();
});

async function issueAccessToken(scopes = ["registry.publish.skill"]): Promise<string> {
  const response = await fetch(`${auth!.url}/v1/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ scopes }),
  });
  const body = (await response.json()) as { accessToken?: string };
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body.accessToken!;
}

const post = (url: string, body: unknown, token?: string) =>
  fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });

describe("serve --role auth and serve --role registry as separate processes", () => {
  it("prints a bare root token from the CLI", () => {
    expect(`${rootToken}\n`).toMatch(/^regrt_[A-Za-z0-9_-]+\n$/);
  });

  it("makes both processes healthy and ready", async () => {
    for (const server of [auth!, registry!]) {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    }
  });

  it("issues tokens on the auth process and publishes with them on the registry process", async () => {
    const token = await issueAccessToken();
    const entry = await publisher.entry("split-roles", "1.0.0");
    const created = await post(`${registry!.url}/v1/entries`, entry, token);
    const body = (await created.json()) as Record<string, unknown>;
    expect(created.status, JSON.stringify(body)).toBe(201);
    expect(body).toMatchObject({ entryDid: entry.entryDid, status: "active", isLatest: true });
    expect(body.sequence).toMatch(/^[1-9][0-9]*$/);

    const resolved = await fetch(`${registry!.url}/v1/entries/${encodeURIComponent(entry.entryDid)}`);
    expect(resolved.status).toBe(200);
    expect(await resolved.json()).toMatchObject({ entryDid: entry.entryDid, publisherDid: publisher.did });
  });

  it("refuses on the registry process tokens the issuer's JWKS does not verify", async () => {
    const entry = await publisher.entry("split-roles", "1.1.0");
    expect((await post(`${registry!.url}/v1/entries`, entry)).status).toBe(401);

    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
    const now = Math.floor(Date.now() / 1000);
    const forged = await new SignJWT({ scope: "registry.publish.skill" })
      .setProtectedHeader({ alg: "EdDSA", typ: "at+jwt", kid: "not-the-issuers" })
      .setIssuer(auth!.url)
      .setAudience("registry")
      .setSubject(publisher.did)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .setJti("forged")
      .sign(privateKey);
    const refused = await post(`${registry!.url}/v1/entries`, entry, forged);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe("unauthenticated");
  });

  it("has no token issuer on the registry process", async () => {
    const rest = await post(`${registry!.url}/v1/tokens`, { scopes: ["registry.publish.skill"] }, rootToken);
    expect(rest.status).toBe(404);
    const connect = await post(`${registry!.url}/auth.v1.TokenService/IssueToken`, { scopes: ["registry.publish.skill"] }, rootToken);
    expect(connect.status).toBe(404);
  });

  it("has no entries on the auth process", async () => {
    const token = await issueAccessToken();
    const entry = await publisher.entry("split-roles", "1.2.0");
    expect((await post(`${auth!.url}/v1/entries`, entry, token)).status).toBe(404);
    expect((await fetch(`${auth!.url}/v1/entries/${encodeURIComponent(entry.entryDid)}`)).status).toBe(404);
    expect((await post(`${auth!.url}/registry.v1.RegistryService/CreateEntry`, { entry }, token)).status).toBe(404);
    // ...while it does publish its keys.
    const jwks = (await (await fetch(`${auth!.url}/.well-known/jwks.json`)).json()) as { keys: unknown[] };
    expect(jwks.keys.length).toBeGreaterThan(0);
  });

  let exits: Array<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number }> = [];

  it(
    "shuts both processes down on SIGTERM with exit code 0, also with an idle keep-alive connection open",
    async () => {
      // An idle HTTP/1.1 keep-alive connection, as any fetch/undici client or proxy leaves behind.
      const agent = new http.Agent({ keepAlive: true });
      for (const server of [auth!, registry!]) {
        const status = await new Promise<number | undefined>((resolve, reject) =>
          http
            .get(`${server.url}/healthz`, { agent }, (response) => {
              response.resume();
              response.on("end", () => resolve(response.statusCode));
            })
            .on("error", reject),
        );
        expect(status).toBe(200);
      }
      try {
        exits = await Promise.all([auth!.stop(2 * SHUTDOWN_GRACE_MS), registry!.stop(2 * SHUTDOWN_GRACE_MS)]);
      } finally {
        agent.destroy();
      }
      expect(exits[0], auth!.output()).toMatchObject({ code: 0, signal: null });
      expect(exits[1], registry!.output()).toMatchObject({ code: 0, signal: null });
    },
    3 * SHUTDOWN_GRACE_MS,
  );

  it("does not let idle keep-alive connections hold shutdown for the whole grace period", () => {
    // Nothing was in flight, so nothing needed the grace: a held connection would take all of it.
    expect(exits).toHaveLength(2);
    for (const exit of exits) expect(exit.afterMs).toBeLessThan(SHUTDOWN_GRACE_MS / 2);
  });
});
