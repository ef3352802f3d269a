import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ChangeSchema, ListChangesResponseSchema } from "../../gen/registry/v1/change_feed_service_pb.js";
import type { LoggedChange } from "../../src/changes/change-log.js";
import { changeMessage } from "../../src/edge/change-feed-handlers.js";
import { changeJson } from "../../src/edge/change-json.js";
import { messageJson, responseJsonBytes } from "../../src/edge/rpc/reused-encodings.js";
import type { StoredEntry } from "../../src/entries/entry-repository.js";

/**
 * The change feed's own JSON writer and message literals against protobuf-es: for every shape a
 * change takes, the text must be what toJsonString makes of the Change message with every
 * implicit field, byte for byte, since REST and Connect JSON answers splice it in place of
 * protobuf-es's; and the messages built without create() must be what create() builds.
 */

const entry: StoredEntry = {
  entryDid: "did:reg:main:skill:web-search@1.2.0",
  baseDid: "did:reg:main:skill:web-search",
  entryType: "skill",
  name: "web-search",
  version: "1.2.0",
  publisherDid: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
  publishedAt: new Date("2026-11-24T03:14:08.000Z"),
  description: 'Searches the "web" \u2028 — ünïcode 🚀 and \\ slashes',
  tags: ["search", "web"],
  data: { license: "MIT", nested: { list: [1, 2.5, -0, true, null, "x"], empty: {} }, 'key with "quotes"': "", zero: 0 },
  contentHash: `sha256:${"ab".repeat(32)}`,
  bondAmount: "100 USDC",
  homepage: "https://example.com/web-search",
  repository: "",
  license: "Apache-2.0 OR MIT",
  payloadType: "registry.entry.v2",
  signature: "ed25519:abc",
  sequence: 9_007_199_254_740_993n,
  status: "active",
  revokedAt: null,
  revocationReason: null,
  isLatest: true,
  deprecation: null,
  yank: null,
  quarantine: null,
  removal: null,
  archive: null,
  deprecated: false,
  archived: false,
} as StoredEntry;

const by = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";
const lifecycle: LoggedChange = {
  index: 77n,
  kind: "entry.lifecycle",
  entries: [
    {
      ...entry,
      status: "deprecated",
      deprecated: true,
      // Stored JSON keeps its own key order; the message's is the proto's.
      deprecation: { by, at: "2026-11-26T00:00:00.000Z", replacement: "did:reg:main:skill:web-search-2", reason: 'use "2"' },
    },
    {
      ...entry,
      version: "1.1.0",
      entryDid: "did:reg:main:skill:web-search@1.1.0",
      status: "yanked",
      yank: { reason: "broken", at: "2026-11-26T00:00:00.000Z", by },
      archive: { reason: "", at: "2026-11-25T00:00:00.000Z", by },
      archived: true,
      isLatest: false,
    },
  ],
  latestVersion: "1.2.0",
  request: {
    payloadType: "registry.lifecycle.v1",
    subject: "did:reg:main:skill:web-search",
    action: "deprecate",
    reason: 'use "2"',
    replacement: "did:reg:main:skill:web-search-2",
    by,
    issuedAt: "2026-11-26T00:00:00.000Z",
    signature: "ed25519:ghi",
  },
  loggedAt: new Date("2026-11-26T00:00:00.002Z"),
};

const created: LoggedChange = {
  index: 0n,
  kind: "entry.created",
  entry,
  latestVersion: "1.2.0",
  loggedAt: new Date("2026-11-24T03:14:08.120Z"),
};
const CHANGES: Array<[string, LoggedChange]> = [
  ["a creation", created],
  [
    "a creation with every implicit field at its default",
    {
      ...created,
      entry: { ...entry, description: "", tags: [], data: {}, bondAmount: "", isLatest: false } as StoredEntry,
      latestVersion: "",
    },
  ],
  [
    "a revocation with its signed request",
    {
      ...created,
      index: 12_345_678_901n,
      kind: "entry.revoked",
      entry: {
        ...entry,
        status: "revoked",
        revokedAt: new Date("2026-11-25T00:00:00.001Z"),
        revocationReason: 'key "compromised"',
        isLatest: false,
      } as StoredEntry,
      latestVersion: "1.1.0",
      revocation: {
        did: "did:reg:main:skill:web-search",
        reason: 'key "compromised"',
        signature: "ed25519:def",
        signer: entry.publisherDid,
      },
    },
  ],
  [
    "a revocation from before the log, with no signature kept",
    { ...created, kind: "entry.revoked", revocation: { did: entry.entryDid, reason: "", signature: "", signer: "" } },
  ],
  ["a lifecycle request that changed two versions", lifecycle],
  ["a moderation request that changed none it returns", { ...lifecycle, kind: "entry.moderation", entries: [] }],
];

/** An entry's message fields as create() takes them: times as text, marks in any member order. */
function entryInit(stored: StoredEntry) {
  return Object.fromEntries(
    Object.entries(stored)
      .filter(([key, value]) => value !== null && key !== "baseDid" && key !== "name")
      .map(([key, value]) => [key, value instanceof Date ? value.toISOString() : value]),
  );
}

/** The Change message as protobuf-es's create() builds it from the change. */
function createdMessage(change: LoggedChange) {
  return create(ChangeSchema, {
    index: change.index,
    kind: change.kind,
    ...("entries" in change
      ? { entries: change.entries.map(entryInit), request: change.request }
      : {
          entry: entryInit(change.entry),
          ...(change.revocation === undefined ? {} : { revocation: change.revocation }),
        }),
    latestVersion: change.latestVersion,
    loggedAt: change.loggedAt.toISOString(),
  });
}

describe("changeJson", () => {
  it.each(CHANGES)("writes %s exactly as protobuf-es does", (_, change) => {
    const message = createdMessage(change);
    expect(changeJson(message)).toBe(toJsonString(ChangeSchema, message, { alwaysEmitImplicit: true }));
  });

  it("is the JSON the edge answers with for the change's message", () => {
    for (const [, change] of CHANGES) {
      const message = changeMessage(change);
      expect(messageJson(ChangeSchema, message)).toBe(toJsonString(ChangeSchema, message, { alwaysEmitImplicit: true }));
    }
  });
});

describe("a page of changes", () => {
  it("is answered with protobuf-es's JSON, each change's text spliced in, every member in field order", () => {
    const page = { $typeName: ListChangesResponseSchema.typeName, changes: CHANGES.map(([, change]) => changeMessage(change)), size: 99n };
    const reflected = create(ListChangesResponseSchema, { changes: CHANGES.map(([, change]) => createdMessage(change)), size: 99n });
    expect(responseJsonBytes(ListChangesResponseSchema, page as never).toString()).toBe(
      toJsonString(ListChangesResponseSchema, reflected, { alwaysEmitImplicit: true }),
    );
  });
});

describe("the change's message, built without create()", () => {
  it.each(CHANGES)("is what create() builds for %s, and encodes alike", (_, change) => {
    const built = changeMessage(change);
    const created = createdMessage(change);
    expect(built).toStrictEqual(created);
    expect(toBinary(ChangeSchema, built)).toEqual(toBinary(ChangeSchema, created));
  });
});
