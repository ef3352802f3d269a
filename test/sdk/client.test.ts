import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createRegistryClient,
  generateKeyPair,
  RegistryClientError,
  type EntryInput,
  type KeyPair,
  type NodeTransportKind,
  type RegistryClient,
} from "../../src/sdk/node.js";
import { startRegistryOnFreshDatabase, type FreshRegistry, type TestRegistry } from "../support/registry-fixture.js";

const TRANSPORTS: readonly NodeTransportKind[] = ["connect", "connect-binary", "grpc-web", "grpc"];
const VERSIONS = ["1.0.0", "1.1.0", "1.2.0", "2.0.0-beta.1", "2.0.0"];

let fresh: FreshRegistry;
let registry: TestRegistry;

beforeAll(async () => {
  fresh = await startRegistryOnFreshDatabase();
  ({ registry } = fresh);
});

afterAll(() => fresh?.close());

/** The publisher-set fields of `name@version`, as a caller of publish gives them. */
function entryFields(key: KeyPair, name: string, version: string, tag: string): EntryInput {
  return {
    entryDid: `did:reg:main:skill:${name}@${version}`,
    entryType: "skill",
    version,
    publisherDid: key.did,
    publishedAt: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
    description: `${name} for the SDK test`,
    tags: [tag, "sdk"],
    data: { license: "MIT", pages: 3 },
    contentHash: `sha256:${"cd".repeat(32)}`,
    bondAmount: "5 USDC",
  };
}

/** Every item an async iterable yields. */
async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

async function failure(promise: Promise<unknown>): Promise<RegistryClientError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(RegistryClientError);
  return error as RegistryClientError;
}

describe.each(TRANSPORTS)("the SDK over %s", (transport) => {
  const name = `sdk-${transport}`;
  const did = `did:reg:main:skill:${name}`;
  let key: KeyPair;
  let client: RegistryClient;

  beforeAll(async () => {
    key = await generateKeyPair();
    const rootToken = await registry.rootToken(key.did, ["registry.publish.*"]);
    client = createRegistryClient({ baseUrl: registry.url, transport, auth: { rootToken } });
  });

  afterAll(() => client?.close());

  it("publishes signed entries with a token exchanged from the root token, and returns them as stored", async () => {
    const sequences: bigint[] = [];
    for (const version of VERSIONS) {
      const fields = entryFields(key, name, version, name);
      const stored = await client.publish(fields, { key });
      expect(stored).toMatchObject({ ...fields, status: "active", tags: [...fields.tags!] });
      expect(stored.signature).toMatch(/^ed25519:/);
      sequences.push(stored.sequence);
    }
    expect([...sequences].sort((a, b) => (a < b ? -1 : 1))).toEqual(sequences);
  });

  it("resolves a version and the latest, and lists the versions highest first", async () => {
    expect((await client.resolve(`${did}@1.1.0`)).version).toBe("1.1.0");
    const latest = await client.resolve(did);
    expect(latest).toMatchObject({ version: "2.0.0", isLatest: true, data: { license: "MIT", pages: 3 } });
    const versions = await client.versions(did);
    expect(versions.map((v) => v.version)).toEqual(["2.0.0", "2.0.0-beta.1", "1.2.0", "1.1.0", "1.0.0"]);
    expect(versions.every((v) => v.status === "active")).toBe(true);
  });

  it("discovers across pages by following the cursor, and gives single pages with theirs", async () => {
    const request = { entryType: "skill", conditions: [{ field: "tags", op: "CONTAINS", value: name }], pageSize: 2 };
    const first = await client.discoverPage(request);
    expect(first.entries).toHaveLength(2);
    expect(first).toMatchObject({ total: 5, totalIsLowerBound: false });
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await client.discoverPage({ ...request, cursor: first.nextCursor });
    expect(second.entries.map((e) => e.version)).toEqual(["1.2.0", "1.1.0"]);

    const all = await collect(client.discover(request));
    // Newest first: the reverse of publishing order.
    expect(all.map((e) => e.version)).toEqual([...VERSIONS].reverse());
  });

  it("queries across pages, each row carrying the selected columns", async () => {
    const ql = `SELECT entry_did, version FROM entries WHERE tags CONTAINS '${name}' ORDER BY version DESC`;
    const first = await client.queryPage(ql, { pageSize: 2 });
    expect(first.rows).toEqual([
      { entryDid: `${did}@2.0.0`, version: "2.0.0" },
      { entryDid: `${did}@2.0.0-beta.1`, version: "2.0.0-beta.1" },
    ]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const rows = await collect(client.query(ql, { pageSize: 2 }));
    expect(rows.map((row) => row.version)).toEqual(["2.0.0", "2.0.0-beta.1", "1.2.0", "1.1.0", "1.0.0"]);
  });

  it("revokes a version with a signed reason, and resolve then shows it revoked", async () => {
    const revoked = await client.revoke(`${did}@2.0.0`, { reason: "superseded by a fix", key });
    expect(revoked.map((e) => [e.version, e.status, e.revocationReason])).toEqual([["2.0.0", "revoked", "superseded by a fix"]]);
    const resolved = await client.resolve(`${did}@2.0.0`);
    expect(resolved).toMatchObject({ status: "revoked", revocationReason: "superseded by a fix" });
    expect(resolved.revokedAt).toEqual(expect.any(String));
    // Latest is now the highest active stable version: stable ranks before prerelease.
    expect((await client.resolve(did)).version).toBe("1.2.0");
  });

  it("signs and sends lifecycle actions twice in the same millisecond, and moderation with an admin token", async () => {
    const [deprecated] = await client.changeLifecycle(`${did}@1.1.0`, "deprecate", { reason: "use 1.2", replacement: `${did}@1.2.0`, key });
    expect(deprecated).toMatchObject({
      status: "deprecated",
      deprecation: { reason: "use 1.2", replacement: `${did}@1.2.0`, by: key.did },
    });
    // Back to back on one name: the SDK's issuedAt keeps rising, so the second is not a replay.
    const [yanked] = await client.changeLifecycle(`${did}@1.1.0`, "yank", { reason: "broken", key });
    expect(yanked).toMatchObject({ status: "yanked", deprecated: true });
    const moderator = await generateKeyPair();
    const adminToken = await registry.accessToken(moderator.did, ["registry.admin"]);
    const [held] = await client.moderate(`${did}@1.0.0`, "quarantine", {
      policy: "spam",
      note: "reported",
      key: moderator,
      token: adminToken,
    });
    expect(held).toMatchObject({ status: "quarantined", quarantine: { policy: "spam", note: "reported", by: moderator.did } });
    const refused = await failure(client.moderate(`${did}@1.0.0`, "unquarantine", { note: "mine", key }));
    expect(refused.code).toBe("permission_denied");
  });

  it("throws RegistryClientError with the Connect code and the fields refused", async () => {
    const malformed = await failure(client.resolve("not-a-did"));
    expect(malformed.code).toBe("invalid_argument");
    expect(malformed.violations.map((v) => v.field)).toEqual(["did"]);

    expect((await failure(client.resolve(`${did}@9.9.9`))).code).toBe("not_found");

    const again = await failure(client.publish(entryFields(key, name, "1.0.0", name), { key }));
    expect(again.code).toBe("already_exists");

    const invalid = await failure(
      client.publish({ ...entryFields(key, name, "3.0.0", name), version: "3.0.0+build", tags: ["ok", "ok"] }, { key }),
    );
    expect(invalid.code).toBe("invalid_argument");
    expect(invalid.violations.map((v) => v.field)).toEqual(expect.arrayContaining(["version", "tags[1]"]));
    expect(invalid.message).toContain("version");
  });
});
