import semver from "semver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { registryClient, type RegistryCalls } from "../support/protocol-clients.js";

/** CONTRACT 4 (latest, versions order) and 5 (revoke), through the running server over REST. */

let db: TestDatabase;
let registry: TestRegistry;
let rest: RegistryCalls;
let publisher: TestPublisher;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  rest = registryClient("rest", registry.url);
  publisher = await createPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

const base = (name: string) => `did:reg:main:skill:${name}`;

async function publish(name: string, version: string, by: TestPublisher = publisher, withToken = token) {
  const result = await rest.create(await by.entry(name, version), withToken);
  expect(result.code, `${name}@${version}: ${result.message}`).toBe("ok");
  return result.body;
}

async function latestOf(name: string): Promise<any> {
  const result = await rest.resolve(base(name));
  expect(result.code, result.message).toBe("ok");
  return result.body;
}

async function versionsOf(name: string): Promise<string[]> {
  const result = await rest.versions(base(name));
  expect(result.code, result.message).toBe("ok");
  return result.body.versions.map((v: { version: string }) => v.version);
}

async function revoke(did: string, reason: string, by: TestPublisher = publisher, withToken = token) {
  return rest.revoke(did, await by.revocation(did, reason), withToken);
}

/** The isLatest flag of every version, by version. */
async function latestFlags(name: string): Promise<Record<string, boolean>> {
  const flags: Record<string, boolean> = {};
  for (const version of await versionsOf(name)) {
    const resolved = await rest.resolve(`${base(name)}@${version}`);
    flags[version] = resolved.body.isLatest;
  }
  return flags;
}

describe("the latest version", () => {
  const name = "out-of-order";

  it("is the highest stable version whatever the publish order", async () => {
    expect((await publish(name, "1.0.0")).isLatest).toBe(true);
    expect((await latestOf(name)).version).toBe("1.0.0");

    expect((await publish(name, "2.0.0")).isLatest).toBe(true);
    expect((await latestOf(name)).version).toBe("2.0.0");

    expect((await publish(name, "1.5.0")).isLatest).toBe(false);
    expect((await latestOf(name)).version).toBe("2.0.0");

    // A prerelease of a higher version does not displace a stable one.
    expect((await publish(name, "2.1.0-rc.1")).isLatest).toBe(false);
    expect(await latestOf(name)).toMatchObject({ version: "2.0.0", status: "active", isLatest: true });

    expect(await latestFlags(name)).toEqual({ "2.1.0-rc.1": false, "2.0.0": true, "1.5.0": false, "1.0.0": false });
  });

  it("lists versions by precedence, prerelease included", async () => {
    expect(await versionsOf(name)).toEqual(["2.1.0-rc.1", "2.0.0", "1.5.0", "1.0.0"]);
  });

  it("moves to the next best active version when the latest is revoked", async () => {
    const did = `${base(name)}@2.0.0`;
    const revoked = await revoke(did, "broken build");
    expect(revoked.code, revoked.message).toBe("ok");
    expect(revoked.body.entries).toHaveLength(1);
    expect(revoked.body.entries[0]).toMatchObject({
      entryDid: did,
      status: "revoked",
      revocationReason: "broken build",
      isLatest: false,
    });
    expect(revoked.body.entries[0].revokedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // 1.5.0, not the higher 2.1.0-rc.1: stable before prerelease.
    expect(await latestOf(name)).toMatchObject({ version: "1.5.0", status: "active", isLatest: true });
    expect(await latestFlags(name)).toEqual({ "2.1.0-rc.1": false, "2.0.0": false, "1.5.0": true, "1.0.0": false });
    // The revoked version stays resolvable with its status, and listed.
    expect((await rest.resolve(did)).body).toMatchObject({ status: "revoked", revocationReason: "broken build" });
    const listed = (await rest.versions(base(name))).body.versions;
    expect(listed.map((v: any) => [v.version, v.status])).toEqual([
      ["2.1.0-rc.1", "active"],
      ["2.0.0", "revoked"],
      ["1.5.0", "active"],
      ["1.0.0", "active"],
    ]);
  });

  it("keeps the first revocation's reason and time when revoked again", async () => {
    const did = `${base(name)}@2.0.0`;
    const first = (await rest.resolve(did)).body;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await revoke(did, "a second reason");
    expect(again.code, again.message).toBe("ok");
    expect(again.body.entries).toHaveLength(1);
    expect(again.body.entries[0]).toMatchObject({
      status: "revoked",
      revocationReason: "broken build",
      revokedAt: first.revokedAt,
    });
    expect((await rest.resolve(did)).body).toMatchObject({ revocationReason: "broken build", revokedAt: first.revokedAt });
  });

  it("revokes every active version through the unversioned DID and lists each in its revoked state", async () => {
    const before = (await rest.resolve(`${base(name)}@2.0.0`)).body;
    const result = await revoke(base(name), "withdrawn");
    expect(result.code, result.message).toBe("ok");
    const entries = result.body.entries as any[];
    expect(entries.map((e) => e.version)).toEqual(["2.1.0-rc.1", "2.0.0", "1.5.0", "1.0.0"]);
    expect(entries.every((e) => e.status === "revoked")).toBe(true);
    expect(entries.map((e) => e.revocationReason)).toEqual(["withdrawn", "broken build", "withdrawn", "withdrawn"]);
    // The earlier revocation keeps its time.
    expect(entries[1].revokedAt).toBe(before.revokedAt);
    // No active version: latest is the best revoked one. Read with the same order as active
    // versions (a stable version before any prerelease), that is 2.0.0 rather than 2.1.0-rc.1.
    expect(await latestOf(name)).toMatchObject({ version: "2.0.0", status: "revoked", isLatest: true });
    expect(Object.values(await latestFlags(name)).filter(Boolean)).toHaveLength(1);
  });

  it("with only stable versions, all revoked, is the highest revoked one", async () => {
    const stable = "all-revoked";
    for (const version of ["1.0.0", "3.0.0", "2.0.0"]) await publish(stable, version);
    const result = await revoke(base(stable), "gone");
    expect(result.body.entries.map((e: any) => [e.version, e.status])).toEqual([
      ["3.0.0", "revoked"],
      ["2.0.0", "revoked"],
      ["1.0.0", "revoked"],
    ]);
    expect(await latestOf(stable)).toMatchObject({ version: "3.0.0", status: "revoked", revocationReason: "gone" });
    // Revocation is permanent: the version slot stays burned.
    const republish = await rest.create(await publisher.entry(stable, "3.0.0"), token);
    expect(republish.code).toBe("already_exists");
    expect(republish.httpStatus).toBe(409);
    // A new version becomes latest again.
    await publish(stable, "1.1.0");
    expect(await latestOf(stable)).toMatchObject({ version: "1.1.0", status: "active" });
  });

  it("is the highest prerelease when an entry has only prereleases, until a stable one appears", async () => {
    const pre = "only-prereleases";
    await publish(pre, "1.0.0-alpha.9");
    await publish(pre, "1.0.0-alpha.10");
    await publish(pre, "0.9.0-rc.1");
    expect((await latestOf(pre)).version).toBe("1.0.0-alpha.10");
    await publish(pre, "0.1.0");
    expect((await latestOf(pre)).version).toBe("0.1.0");
    expect(await versionsOf(pre)).toEqual(["1.0.0-alpha.10", "1.0.0-alpha.9", "0.9.0-rc.1", "0.1.0"]);
  });
});

describe("the versions listing", () => {
  // SemVer 2.0.0 section 11's example chain, plus numbers of different lengths.
  const ascending = [
    "0.9.0",
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.9",
    "1.0.0-alpha.10",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.2.0",
    "1.9.0",
    "1.10.0",
    "1.10.1",
    "2.0.0",
    "10.0.0",
  ];
  const name = "precedence";

  beforeAll(async () => {
    // A fixed shuffle that puts text order and precedence order at odds.
    const order = [13, 4, 0, 16, 8, 2, 11, 5, 15, 1, 12, 6, 9, 3, 14, 7, 10];
    expect([...order].sort((a, b) => a - b)).toEqual(ascending.map((_, i) => i));
    for (const index of order) await publish(name, ascending[index] as string);
  });

  it("orders by SemVer precedence, not text", async () => {
    const expected = [...ascending].reverse();
    expect([...ascending].sort(semver.rcompare)).toEqual(expected);
    expect(await versionsOf(name)).toEqual(expected);
    expect((await latestOf(name)).version).toBe("10.0.0");
  });

  it("gives the same items over gRPC", async () => {
    const grpc = registryClient("grpc", registry.url);
    try {
      const listed = await grpc.versions(base(name));
      expect(listed.code).toBe("ok");
      expect(listed.body.versions.map((v: any) => v.version)).toEqual([...ascending].reverse());
      expect(listed.body.versions[0]).toEqual({
        version: "10.0.0",
        entryDid: `${base(name)}@10.0.0`,
        status: "active",
        publishedAt: expect.stringMatching(/\.\d{3}Z$/),
        sequence: expect.stringMatching(/^[1-9][0-9]*$/),
        deprecated: false,
        yanked: false,
      });
      const latest = await grpc.resolve(base(name));
      expect(latest.body).toMatchObject({ version: "10.0.0", isLatest: true });
    } finally {
      grpc.close();
    }
  });

  it("refuses a DID with a version and an unknown entry", async () => {
    const versioned = await rest.versions(`${base(name)}@1.0.0`);
    expect(versioned.code).toBe("invalid_argument");
    expect(versioned.fields).toEqual(["did"]);
    const unknown = await rest.versions(base("no-such-entry"));
    expect(unknown.code).toBe("not_found");
    expect(unknown.httpStatus).toBe(404);
  });
});

describe("revoke authorization and validity", () => {
  const name = "guarded";
  const v1 = `${base(name)}@1.0.0`;
  let other: TestPublisher;
  let otherToken: string;

  beforeAll(async () => {
    await publish(name, "1.0.0");
    await publish(name, "1.1.0");
    other = await createPublisher();
    otherToken = await registry.accessToken(other.did, ["registry.publish.skill"]);
  });

  async function statusOf(did: string): Promise<string> {
    return (await rest.resolve(did)).body.status;
  }

  it("refuses another publisher with permission_denied", async () => {
    const result = await revoke(v1, "not mine", other, otherToken);
    expect(result.code).toBe("permission_denied");
    expect(result.httpStatus).toBe(403);
    expect(await statusOf(v1)).toBe("active");
    const all = await revoke(base(name), "not mine", other, otherToken);
    expect(all.code).toBe("permission_denied");
    expect(await latestOf(name)).toMatchObject({ version: "1.1.0", status: "active" });
  });

  it("refuses the publisher's own key on a token without registry.publish.<entryType>", async () => {
    const agentOnly = await registry.accessToken(publisher.did, ["registry.publish.agent"]);
    const result = await revoke(v1, "wrong scope", publisher, agentOnly);
    expect(result.code).toBe("permission_denied");
    expect(await statusOf(v1)).toBe("active");
  });

  it("refuses without a token, before anything else", async () => {
    const result = await rest.revoke(base("no-such-entry"), { reason: "", signature: "x" });
    expect(result.code).toBe("unauthenticated");
    expect(result.httpStatus).toBe(401);
  });

  it("refuses a signature over another reason with invalid_argument", async () => {
    const signedOther = await publisher.revocation(v1, "reason one");
    const result = await rest.revoke(v1, { reason: "reason two", signature: signedOther.signature }, token);
    expect(result.code).toBe("invalid_argument");
    expect(result.httpStatus).toBe(400);
    expect(result.fields).toEqual(["signature"]);
    expect(result.message).toContain("signature does not verify");
    expect(await statusOf(v1)).toBe("active");
  });

  it("checks the signature before authorization and state", async () => {
    // Another publisher, with a bad signature: the request's own validity (400) comes first.
    const bad = await other.revocation(v1, "reason one");
    const forbidden = await rest.revoke(v1, { reason: "reason two", signature: bad.signature }, otherToken);
    expect(forbidden.code).toBe("invalid_argument");
    // An unknown entry with a bad signature: 400 before 404.
    const unknown = `${base("no-such-entry")}@1.0.0`;
    const missing = await rest.revoke(unknown, { reason: "x", signature: (await publisher.revocation(unknown, "y")).signature }, token);
    expect(missing.code).toBe("invalid_argument");
  });

  it("requires the signature over the DID exactly as addressed", async () => {
    // Signed for the unversioned DID, sent to @1.0.0.
    const forAll = await publisher.revocation(base(name), "scoped wrong");
    const narrow = await rest.revoke(v1, forAll, token);
    expect(narrow.code).toBe("invalid_argument");
    expect(narrow.message).toContain("signature does not verify");
    // Signed for @1.0.0, sent to the unversioned DID: must not revoke everything.
    const forOne = await publisher.revocation(v1, "scoped wrong");
    const wide = await rest.revoke(base(name), forOne, token);
    expect(wide.code).toBe("invalid_argument");
    expect(await statusOf(v1)).toBe("active");
    expect(await statusOf(`${base(name)}@1.1.0`)).toBe("active");
  });

  it("validates the reason: 1 to 500 characters", async () => {
    const empty = await revoke(v1, "");
    expect(empty.code).toBe("invalid_argument");
    expect(empty.fields).toEqual(["reason"]);
    const long = await revoke(v1, "r".repeat(501));
    expect(long.code).toBe("invalid_argument");
    expect(long.fields).toEqual(["reason"]);
    expect(await statusOf(v1)).toBe("active");
  });

  it("answers not_found for an unknown version or entry", async () => {
    const unknownVersion = await revoke(`${base(name)}@9.9.9`, "nope");
    expect(unknownVersion.code).toBe("not_found");
    expect(unknownVersion.httpStatus).toBe(404);
    const unknownEntry = await revoke(base("never-published"), "nope");
    expect(unknownEntry.code).toBe("not_found");
  });

  it("lets a registry.admin token revoke any entry, signed with the admin's key", async () => {
    const admin = await createPublisher();
    const adminToken = await registry.accessToken(admin.did, ["registry.admin"]);
    const result = await revoke(v1, "moderation: malware", admin, adminToken);
    expect(result.code, result.message).toBe("ok");
    expect(result.body.entries).toHaveLength(1);
    expect(result.body.entries[0]).toMatchObject({ entryDid: v1, status: "revoked", revocationReason: "moderation: malware" });
    expect(await latestOf(name)).toMatchObject({ version: "1.1.0", status: "active" });
  });

  it("accepts the addressed DID with a literal @ as well as %40", async () => {
    const did = `${base(name)}@1.1.0`;
    const body = await publisher.revocation(did, "literal at");
    const response = await fetch(`${registry.url}/v1/entries/${did}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json: any = await response.json();
    expect(response.status).toBe(200);
    expect(json.entries.map((e: any) => [e.version, e.status, e.revocationReason])).toEqual([["1.1.0", "revoked", "literal at"]]);
  });
});

describe("entry ownership", () => {
  it("refuses a new version of an entry DID owned by another publisher", async () => {
    const name = "owned";
    await publish(name, "1.0.0");
    const other = await createPublisher();
    const otherToken = await registry.accessToken(other.did, ["registry.publish.skill"]);
    const result = await rest.create(await other.entry(name, "2.0.0"), otherToken);
    expect(result.code).toBe("permission_denied");
    expect(result.httpStatus).toBe(403);
    expect(await versionsOf(name)).toEqual(["1.0.0"]);
    expect((await latestOf(name)).publisherDid).toBe(publisher.did);
    // Still refused once every version of it is revoked.
    expect((await revoke(base(name), "retired")).code).toBe("ok");
    expect((await rest.create(await other.entry(name, "3.0.0"), otherToken)).code).toBe("permission_denied");
    expect(await versionsOf(name)).toEqual(["1.0.0"]);
  });

  it("refuses a token whose subject is not the publisherDid", async () => {
    const other = await createPublisher();
    const otherToken = await registry.accessToken(other.did, ["registry.publish.skill"]);
    // Signed correctly by the publisher, sent with someone else's token.
    const result = await rest.create(await publisher.entry("not-your-token", "1.0.0"), otherToken);
    expect(result.code).toBe("permission_denied");
    expect((await rest.resolve(base("not-your-token"))).code).toBe("not_found");
  });
});
