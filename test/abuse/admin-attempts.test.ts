import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_ATTEMPT_LIMIT } from "../../src/auth/admin-credential.js";
import { readAdminCredential } from "../../src/storage/admin-credential-file.js";
import { temporaryDirectory } from "../support/child-processes.js";
import { startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * Guessing the admin credential on the public port: each client address (an IPv6 /64 as one) gets
 * ADMIN_ATTEMPT_LIMIT.burst wrong guesses, then is refused (429) whatever it sends, the right
 * credential included, so guessing on teaches nothing; other addresses are not affected. The
 * server runs with no rate limits configured: this limit stands on its own. Clients are presented
 * through X-Forwarded-For from a trusted loopback proxy.
 */

let db: TestDatabase;
let dataDir: { path: string; remove(): Promise<void> };
let registry: TestRegistry;
let credential: string;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await temporaryDirectory("registry-admin-attempts-");
  registry = await startTestRegistry(db.database, { adminApi: true, dataDir: dataDir.path, trustProxy: ["loopback"] });
  credential = (await readAdminCredential(dataDir.path)) as string;
});

afterAll(async () => {
  await registry?.close();
  await db?.drop();
  await dataDir?.remove();
});

const WRONG = `Bearer ${Buffer.alloc(32, 9).toString("base64url")}`;

/** GET /v1/admin/root-tokens as `client`; its status and error code. */
async function listAs(client: string, authorization?: string): Promise<{ status: number; code?: string; message?: string }> {
  const headers: Record<string, string> = { "x-forwarded-for": client };
  if (authorization !== undefined) headers.authorization = authorization;
  const response = await fetch(`${registry.url}/v1/admin/root-tokens`, { headers });
  const body = (await response.json()) as { code?: string; message?: string };
  return { status: response.status, code: body.code, message: body.message };
}

describe("wrong admin credentials", () => {
  it("are refused after the allowance, right credential included, for the whole /64 only", async () => {
    const guesser = "2001:db8:c:1::1";
    for (let i = 0; i < ADMIN_ATTEMPT_LIMIT.burst; i++) expect((await listAs(guesser, WRONG)).status).toBe(401);
    const refused = await listAs(guesser, WRONG);
    expect(refused).toMatchObject({ status: 429, code: "resource_exhausted" });
    expect(refused.message).toContain("too many wrong admin credentials");
    expect(refused.message).not.toContain(credential);
    expect((await listAs(guesser, `Bearer ${credential}`)).status).toBe(429);
    expect((await listAs("2001:db8:c:1:ffff::2", `Bearer ${credential}`)).status).toBe(429);
    expect((await listAs("2001:db8:c:2::1", `Bearer ${credential}`)).status).toBe(200);
    expect((await listAs("192.0.2.60", `Bearer ${credential}`)).status).toBe(200);
  });

  it("only guesses count: a missing or malformed header teaches nothing and spends nothing", async () => {
    const client = "192.0.2.61";
    for (let i = 0; i < ADMIN_ATTEMPT_LIMIT.burst + 5; i++) {
      expect((await listAs(client)).status).toBe(401);
      expect((await listAs(client, `Basic ${credential}`)).status).toBe(401);
    }
    expect((await listAs(client, `Bearer ${credential}`)).status).toBe(200);
  });
});
