import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient } from "../support/protocol-clients.js";

let db: TestDatabase;
let registry: TestRegistry;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

describe.each(PROTOCOLS)("the entry lifecycle over %s", (protocol) => {
  let publisher: TestPublisher;
  let token: string;
  const name = `web-search-${protocol}`;
  const base = `did:reg:main:skill:${name}`;

  beforeAll(async () => {
    publisher = await createPublisher();
    token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  });

  it("publishes an entry and returns it with its sequence", async () => {
    const client = registryClient(protocol, registry.url);
    const entry = await publisher.entry(name, "1.2.0");
    const created = await client.create(entry, token);
    expect(created.code).toBe("ok");
    if (protocol === "rest") expect(created.httpStatus).toBe(201);
    expect(created.body).toMatchObject({
      entryDid: `${base}@1.2.0`,
      version: "1.2.0",
      publisherDid: publisher.did,
      tags: ["search", "web"],
      data: { license: "MIT" },
      bondAmount: "100 USDC",
      status: "active",
      isLatest: true,
      signature: entry.signature,
    });
    expect(created.body.sequence).toMatch(/^[1-9][0-9]*$/);
    client.close();
  });

  it("resolves the latest and a given version, with @ literal or encoded", async () => {
    const client = registryClient(protocol, registry.url);
    await client.create(await publisher.entry(name, "1.3.0"), token);
    const latest = await client.resolve(base);
    expect(latest.code).toBe("ok");
    expect(latest.body.version).toBe("1.3.0");
    const pinned = await client.resolve(`${base}@1.2.0`);
    expect(pinned.body).toMatchObject({ version: "1.2.0", isLatest: false });
    client.close();
  });

  it("lists versions, highest precedence first", async () => {
    const client = registryClient(protocol, registry.url);
    const listed = await client.versions(base);
    expect(listed.code).toBe("ok");
    expect(listed.body.versions.map((v: { version: string }) => v.version)).toEqual(["1.3.0", "1.2.0"]);
    expect(listed.body.versions[0]).toEqual({
      version: "1.3.0",
      entryDid: `${base}@1.3.0`,
      status: "active",
      publishedAt: expect.stringMatching(/Z$/),
      sequence: expect.stringMatching(/^[0-9]+$/),
      deprecated: false,
      yanked: false,
    });
    client.close();
  });

  it("revokes a version with a signed reason and keeps it visible", async () => {
    const client = registryClient(protocol, registry.url);
    const did = `${base}@1.3.0`;
    const revoked = await client.revoke(did, await publisher.revocation(did, "key compromised"), token);
    expect(revoked.code).toBe("ok");
    expect(revoked.body.entries).toHaveLength(1);
    expect(revoked.body.entries[0]).toMatchObject({ status: "revoked", revocationReason: "key compromised" });
    const resolved = await client.resolve(did);
    expect(resolved.body).toMatchObject({ status: "revoked", revocationReason: "key compromised" });
    expect((await client.resolve(base)).body.version).toBe("1.2.0");
    client.close();
  });

  it("answers not_found for an unknown entry and invalid_argument for a malformed DID", async () => {
    const client = registryClient(protocol, registry.url);
    expect((await client.resolve("did:reg:main:skill:nothing-here")).code).toBe("not_found");
    const malformed = await client.resolve("did:reg:main:skill:Bad Name");
    expect(malformed.code).toBe("invalid_argument");
    expect(malformed.message).toContain("did");
    client.close();
  });

  it("refuses a second publish of a version, also after revocation", async () => {
    const client = registryClient(protocol, registry.url);
    const again = await client.create(await publisher.entry(name, "1.3.0"), token);
    expect(again.code).toBe("already_exists");
    if (protocol === "rest") expect(again.httpStatus).toBe(409);
    client.close();
  });
});
