import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyPair, signLifecycle, signModeration, type KeyPair } from "../../src/sdk/index.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient, type Protocol, type RegistryCalls } from "../support/protocol-clients.js";
import { changeLogSize } from "../support/rest-publishing.js";

/**
 * What happens after publishing (CONTRACT-HISTORY sections 11-13), through the running server on
 * every protocol: each lifecycle and moderation action, what every read shows after it, and each
 * refusal in the contract's order.
 */

let db: TestDatabase;
let registry: TestRegistry;
let moderator: KeyPair;
let moderatorToken: string;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database, { logIntegrateMs: 50 });
  moderator = await generateKeyPair();
  moderatorToken = await registry.accessToken(moderator.did, ["registry.admin"]);
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

let clock = Date.now();
/** Strictly later than the last one this file made: the registry accepts nothing older on a name. */
function issuedAt(): string {
  clock = Math.max(Date.now(), clock + 1);
  return new Date(clock).toISOString();
}

async function lifecycleBody(
  signer: TestPublisher | KeyPair,
  did: string,
  action: string,
  extra: { reason?: string; replacement?: string } = {},
) {
  const keys = "keys" in signer ? signer.keys : signer;
  const fields = {
    subject: did,
    action,
    reason: extra.reason ?? "",
    replacement: extra.replacement ?? "",
    by: keys.did,
    issuedAt: issuedAt(),
  };
  return { ...fields, signature: await signLifecycle(fields as never, keys.privateKey) };
}

async function moderationBody(did: string, action: string, policy: string, note: string, signer: KeyPair = moderator) {
  const fields = { subject: did, action, policy, note, by: signer.did, issuedAt: issuedAt() };
  return { ...fields, signature: await signModeration(fields as never, signer.privateKey) };
}

/** The request body as sent: the payload's members the API takes, and the signature. */
function sent(body: Record<string, string>) {
  const { subject: _subject, by: _by, ...rest } = body;
  return rest;
}

describe.each(PROTOCOLS)("lifecycle actions over %s", (protocol: Protocol) => {
  let client: RegistryCalls & { close(): void };
  let publisher: TestPublisher;
  let token: string;
  const name = `states-${protocol}`;
  const base = `did:reg:main:skill:${name}`;

  beforeAll(async () => {
    client = registryClient(protocol, registry.url);
    publisher = await createPublisher();
    token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
    for (const version of ["1.0.0", "1.1.0", "2.0.0-rc.1"]) {
      expect((await client.create(await publisher.entry(name, version), token)).code).toBe("ok");
    }
  });
  afterAll(() => client.close());

  it("deprecates a version with a replacement: still resolvable and latest, with the mark on every read", async () => {
    const body = await lifecycleBody(publisher, `${base}@1.1.0`, "deprecate", { reason: "use 2.0", replacement: `${base}@1.0.0` });
    const answer = await client.lifecycle(`${base}@1.1.0`, sent(body), token);
    expect(answer.code, answer.message).toBe("ok");
    expect(answer.body.entries).toHaveLength(1);
    const mark = { reason: "use 2.0", replacement: `${base}@1.0.0`, by: publisher.did };
    expect(answer.body.entries[0]).toMatchObject({ status: "deprecated", deprecated: true, deprecation: mark, isLatest: true });
    expect(Date.parse(answer.body.entries[0].deprecation.at)).not.toBeNaN();
    expect((await client.resolve(base)).body).toMatchObject({ version: "1.1.0", status: "deprecated", deprecation: mark });
    const versions = (await client.versions(base)).body.versions;
    expect(versions.find((v: { version: string }) => v.version === "1.1.0")).toMatchObject({
      status: "deprecated",
      deprecated: true,
      yanked: false,
    });
  });

  it("yanks the latest: latest moves to the best active or deprecated version, the yanked one resolves by version", async () => {
    const body = await lifecycleBody(publisher, `${base}@1.1.0`, "yank", { reason: "broken build" });
    const answer = await client.lifecycle(`${base}@1.1.0`, sent(body), token);
    expect(answer.code, answer.message).toBe("ok");
    expect(answer.body.entries[0]).toMatchObject({ status: "yanked", deprecated: true, yank: { reason: "broken build" }, isLatest: false });
    expect((await client.resolve(base)).body).toMatchObject({ version: "1.0.0", status: "active", isLatest: true });
    expect((await client.resolve(`${base}@1.1.0`)).body).toMatchObject({ status: "yanked", yank: { reason: "broken build" } });
    const versions = (await client.versions(base)).body.versions;
    expect(versions.find((v: { version: string }) => v.version === "1.1.0")).toMatchObject({ yanked: true, deprecated: true });
  });

  it("undoes what is in place, and answers an undo of what is not with no change and no log record", async () => {
    const unyank = await client.lifecycle(`${base}@1.1.0`, sent(await lifecycleBody(publisher, `${base}@1.1.0`, "unyank")), token);
    expect(unyank.body.entries[0]).toMatchObject({ status: "deprecated", isLatest: true });
    expect(unyank.body.entries[0].yank ?? null).toBeNull();
    const size = await changeLogSize(registry.url);
    const again = await client.lifecycle(`${base}@1.1.0`, sent(await lifecycleBody(publisher, `${base}@1.1.0`, "unyank")), token);
    expect(again.code, again.message).toBe("ok");
    expect(again.body.entries[0]).toMatchObject({ status: "deprecated" });
    expect(await changeLogSize(registry.url)).toBe(size);
  });

  it("acts on every version through the bare DID, in one request", async () => {
    const answer = await client.lifecycle(base, sent(await lifecycleBody(publisher, base, "deprecate", { reason: "superseded" })), token);
    expect(answer.code, answer.message).toBe("ok");
    expect(answer.body.entries.map((e: { status: string }) => e.status)).toEqual(["deprecated", "deprecated", "deprecated"]);
    const undone = await client.lifecycle(base, sent(await lifecycleBody(publisher, base, "undeprecate")), token);
    expect(undone.body.entries.map((e: { status: string }) => e.status)).toEqual(["active", "active", "active"]);
  });

  it("archives a name: no new version until it is unarchived; reads are unchanged", async () => {
    const archived = await client.lifecycle(base, sent(await lifecycleBody(publisher, base, "archive", { reason: "unmaintained" })), token);
    expect(archived.code, archived.message).toBe("ok");
    for (const entry of archived.body.entries) expect(entry).toMatchObject({ archived: true, archive: { reason: "unmaintained" } });
    const refused = await client.create(await publisher.entry(name, "3.0.0"), token);
    expect(refused.code).toBe("failed_precondition");
    expect(refused.message).toContain("archived");
    if (protocol === "rest") expect(refused.httpStatus).toBe(400);
    expect((await client.resolve(base)).body).toMatchObject({ archived: true, status: "active" });
    const unarchived = await client.lifecycle(base, sent(await lifecycleBody(publisher, base, "unarchive")), token);
    expect(unarchived.body.entries[0].archived).toBe(false);
    expect((await client.create(await publisher.entry(name, "3.0.0"), token)).code).toBe("ok");
  });

  it("refuses a replayed signature and a stale one, naming issuedAt", async () => {
    const body = await lifecycleBody(publisher, `${base}@1.0.0`, "deprecate", { reason: "once" });
    expect((await client.lifecycle(`${base}@1.0.0`, sent(body), token)).code).toBe("ok");
    const replayed = await client.lifecycle(`${base}@1.0.0`, sent(body), token);
    expect(replayed.code).toBe("failed_precondition");
    expect(replayed.message).toContain("issuedAt");
    // An older request on another version of the same name: the name keeps one clock per payload type.
    const older = { ...body, subject: `${base}@3.0.0`, issuedAt: new Date(Date.parse(body.issuedAt) - 1).toISOString() };
    const olderSigned = { ...older, signature: await signLifecycle(older as never, publisher.keys.privateKey) };
    expect((await client.lifecycle(`${base}@3.0.0`, sent(olderSigned), token)).code).toBe("failed_precondition");
    const stale = { ...body, issuedAt: new Date(Date.now() - 10 * 60_000).toISOString() };
    const staleSigned = { ...stale, signature: await signLifecycle(stale as never, publisher.keys.privateKey) };
    const refused = await client.lifecycle(`${base}@1.0.0`, sent(staleSigned), token);
    expect(refused.code).toBe("invalid_argument");
    expect(refused.fields).toContain("issuedAt");
  });

  it("refuses in the contract's order: token, then fields, then signature, then authority, then state", async () => {
    const body = await lifecycleBody(publisher, `${base}@1.0.0`, "yank", { reason: "x" });
    expect((await client.lifecycle(`${base}@1.0.0`, sent(body))).code).toBe("unauthenticated");
    const badAction = await client.lifecycle(`${base}@1.0.0`, { ...sent(body), action: "delete" }, token);
    expect([badAction.code, badAction.fields]).toEqual(["invalid_argument", ["action"]]);
    const noReason = await client.lifecycle(`${base}@1.0.0`, sent(await lifecycleBody(publisher, `${base}@1.0.0`, "yank")), token);
    expect([noReason.code, noReason.fields]).toEqual(["invalid_argument", ["reason"]]);
    const archiveVersion = await client.lifecycle(
      `${base}@1.0.0`,
      sent(await lifecycleBody(publisher, `${base}@1.0.0`, "archive", { reason: "x" })),
      token,
    );
    expect([archiveVersion.code, archiveVersion.fields]).toEqual(["invalid_argument", ["did"]]);
    const tampered = await client.lifecycle(`${base}@1.0.0`, { ...sent(body), reason: "y" }, token);
    expect([tampered.code, tampered.fields]).toEqual(["invalid_argument", ["signature"]]);
    const stranger = await createPublisher();
    const strangerToken = await registry.accessToken(stranger.did, ["registry.publish.skill"]);
    const foreign = await client.lifecycle(
      `${base}@1.0.0`,
      sent(await lifecycleBody(stranger, `${base}@1.0.0`, "yank", { reason: "x" })),
      strangerToken,
    );
    expect(foreign.code).toBe("permission_denied");
    // Authority comes before state: a stranger learns nothing of versions or replacements.
    for (const [did, extra] of [
      [`${base}@9.9.9`, { reason: "x" }],
      [`${base}@1.0.0`, { reason: "x", replacement: "did:reg:main:skill:nowhere-at-all" }],
    ] as const) {
      const action = "replacement" in extra ? "deprecate" : "yank";
      const refused = await client.lifecycle(did, sent(await lifecycleBody(stranger, did, action, extra)), strangerToken);
      expect(refused.code, did).toBe("permission_denied");
    }
    const missing = await client.lifecycle(
      `${base}@9.9.9`,
      sent(await lifecycleBody(publisher, `${base}@9.9.9`, "yank", { reason: "x" })),
      token,
    );
    expect(missing.code, JSON.stringify(missing.body)).toBe("not_found");
    const nowhere = await client.lifecycle(
      `${base}@1.0.0`,
      sent(await lifecycleBody(publisher, `${base}@1.0.0`, "deprecate", { reason: "x", replacement: "did:reg:main:skill:nowhere-at-all" })),
      token,
    );
    expect([nowhere.code, nowhere.message]).toEqual(["failed_precondition", expect.stringContaining("replacement")]);
  });

  it("moderates: quarantine hides a version from latest and discovery, only a moderator lifts it, removal withholds", async () => {
    const quarantined = await client.moderate(
      `${base}@3.0.0`,
      sent(await moderationBody(`${base}@3.0.0`, "quarantine", "malware", "under review")),
      moderatorToken,
    );
    expect(quarantined.code, quarantined.message).toBe("ok");
    expect(quarantined.body.entries[0]).toMatchObject({
      status: "quarantined",
      quarantine: { policy: "malware", note: "under review", by: moderator.did },
    });
    expect((await client.resolve(base)).body.version).not.toBe("3.0.0");
    const byPublisher = await client.moderate(
      `${base}@3.0.0`,
      sent(await moderationBody(`${base}@3.0.0`, "unquarantine", "", "mine", publisher.keys)),
      token,
    );
    expect(byPublisher.code).toBe("permission_denied");
    const lifted = await client.moderate(
      `${base}@3.0.0`,
      sent(await moderationBody(`${base}@3.0.0`, "unquarantine", "", "cleared")),
      moderatorToken,
    );
    expect(lifted.body.entries[0]).toMatchObject({ status: "active", isLatest: true });
    const removed = await client.moderate(
      `${base}@3.0.0`,
      sent(await moderationBody(`${base}@3.0.0`, "remove", "malware", "confirmed")),
      moderatorToken,
    );
    expect(removed.body.entries[0]).toMatchObject({
      status: "removed",
      description: "",
      tags: [],
      removal: { policy: "malware", note: "confirmed" },
    });
    const served = (await client.resolve(`${base}@3.0.0`)).body;
    expect(served).toMatchObject({ status: "removed", description: "", tags: [], isLatest: false });
    expect(served.data ?? {}).toEqual({});
    const again = await client.lifecycle(
      `${base}@3.0.0`,
      sent(await lifecycleBody(publisher, `${base}@3.0.0`, "yank", { reason: "x" })),
      token,
    );
    expect(again.code).toBe("failed_precondition");
  });
});

describe("reads, discovery and the log after actions", () => {
  let publisher: TestPublisher;
  let token: string;
  const client = () => registryClient("rest", registry.url);

  beforeAll(async () => {
    publisher = await createPublisher();
    token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  });

  it("discovers active and deprecated versions by default, the others only when a condition names status", async () => {
    const rest = client();
    const names = ["disc-active", "disc-deprecated", "disc-yanked", "disc-quarantined", "disc-removed"];
    for (const name of names)
      expect((await rest.create(await publisher.entry(name, "1.0.0", { tags: ["states-discovery"] }), token)).code).toBe("ok");
    const did = (name: string) => `did:reg:main:skill:${name}@1.0.0`;
    await rest.lifecycle(
      did("disc-deprecated"),
      sent(await lifecycleBody(publisher, did("disc-deprecated"), "deprecate", { reason: "x" })),
      token,
    );
    await rest.lifecycle(did("disc-yanked"), sent(await lifecycleBody(publisher, did("disc-yanked"), "yank", { reason: "x" })), token);
    await rest.moderate(
      did("disc-quarantined"),
      sent(await moderationBody(did("disc-quarantined"), "quarantine", "spam", "x")),
      moderatorToken,
    );
    await rest.moderate(did("disc-removed"), sent(await moderationBody(did("disc-removed"), "remove", "spam", "x")), moderatorToken);
    const tagged = { field: "tags", op: "CONTAINS", value: "states-discovery" };
    const byDefault = await rest.discover({ conditions: [tagged] });
    expect(byDefault.body.entries.map((e: { name?: string; entryDid: string }) => e.entryDid).sort()).toEqual([
      did("disc-active"),
      did("disc-deprecated"),
    ]);
    // A removal withholds the tags too, so the removed version is found by name.
    const named = { field: "name", op: "IN", value: names };
    const all = await rest.discover({
      conditions: [named, { field: "status", op: "IN", value: ["active", "deprecated", "yanked", "quarantined", "removed"] }],
    });
    expect(all.body.entries).toHaveLength(5);
    const removed = all.body.entries.find((e: { entryDid: string }) => e.entryDid === did("disc-removed"));
    expect(removed).toMatchObject({ status: "removed", description: "" });
    const ql = await rest.query({
      query: "SELECT entry_did, deprecated FROM entries WHERE tags CONTAINS 'states-discovery' AND deprecated = TRUE",
    });
    expect(ql.body.entries).toEqual([{ entryDid: did("disc-deprecated"), deprecated: true }]);
    // A removed name answers not_found for its bare DID.
    expect((await rest.resolve("did:reg:main:skill:disc-removed")).code).toBe("not_found");
  });

  it("logs one record per request, with the request as signed and each changed version", async () => {
    const rest = client();
    await rest.create(await publisher.entry("logged", "1.0.0"), token);
    await rest.create(await publisher.entry("logged", "1.1.0"), token);
    const before = await changeLogSize(registry.url);
    const body = await lifecycleBody(publisher, "did:reg:main:skill:logged", "yank", { reason: "both" });
    expect((await rest.lifecycle("did:reg:main:skill:logged", sent(body), token)).code).toBe("ok");
    const page = (await (await fetch(`${registry.url}/v1/changes?after=${before - 1}`)).json()) as { changes: Record<string, any>[] };
    expect(page.changes).toHaveLength(1);
    const [change] = page.changes;
    expect(change).toMatchObject({
      kind: "entry.lifecycle",
      request: { ...body, payloadType: "registry.lifecycle.v1" },
      latestVersion: "1.1.0",
    });
    expect(change!.entries.map((e: { version: string; status: string }) => [e.version, e.status])).toEqual([
      ["1.0.0", "yanked"],
      ["1.1.0", "yanked"],
    ]);
  });

  it("keeps the database's status and the domain's precedence the same", async () => {
    const { statusOf } = await import("../../src/domain/version-state.js");
    const mark = { reason: "r", at: "2026-01-01T00:00:00.000Z", by: "did:key:x" };
    const members = ["deprecation", "yank", "quarantine", "removal", "revocation"] as const;
    const rows = await db.database.knex.raw(
      `select e.version, e.status from entries e where e.base_did = 'did:reg:main:skill:logged' order by e.version_key`,
    );
    expect(rows.rows.length).toBeGreaterThan(0);
    for (let combination = 0; combination < 1 << members.length; combination++) {
      const set = members.filter((_, bit) => (combination >> bit) & 1);
      const columns: Record<string, unknown> = {
        deprecation: null,
        yank: null,
        quarantine: null,
        removal: null,
        revoked_at: null,
        revocation_reason: null,
      };
      const state: Record<string, unknown> = {};
      for (const member of set) {
        if (member === "revocation") {
          columns.revoked_at = new Date();
          columns.revocation_reason = "r";
          state.revocation = { revokedAt: new Date(), revocationReason: "r" };
        } else {
          columns[member] = JSON.stringify(mark);
          state[member] = mark;
        }
      }
      const [updated] = await db.database
        .knex("entries")
        .where({ entry_did: "did:reg:main:skill:logged@1.0.0" })
        .update(columns, ["status"]);
      expect(updated.status, set.join("+")).toBe(statusOf(state as never));
    }
  });
});
