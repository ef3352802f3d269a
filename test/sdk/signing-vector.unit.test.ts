import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as ed from "@noble/ed25519";
import { describe, expect, it } from "vitest";
import { runKeyCommand, type KeyCommandIo } from "../../src/cli/key-commands.js";
import { createSignatureVerifier, formatSignature, parseSignature } from "../../src/domain/ed25519-signature.js";
import type { EntryRepository } from "../../src/entries/entry-repository.js";
import { createEntryActionService } from "../../src/entries/entry-action-service.js";
import { InvalidArgumentError, NotFoundError } from "../../src/errors.js";
import { verifyRecordSignatures, type LogRecord } from "../../src/sdk/log-verifier.js";
import { verifyEd25519 } from "../../src/sdk/signing.js";
import {
  decodePrivateKey,
  decodeSignature,
  didFromEd25519Key,
  encodePrivateKey,
  ed25519KeyFromDid,
  encodeSignature,
  entrySigningPayload,
  keyPairFromSeed,
  lifecycleSigningPayload,
  moderationSigningPayload,
  revocationSigningPayload,
  signEntry,
  signLifecycle,
  signModeration,
  signRevocation,
  verifyEntrySignature,
  verifyRevocationSignature,
  type EntrySigningFields,
} from "../../src/sdk/index.js";
import {
  DID,
  ENTRY,
  ENTRY_SIGNATURE,
  ENTRY_V2,
  ENTRY_V2_SIGNATURE,
  LIFECYCLE,
  LIFECYCLE_SIGNATURE,
  MODERATION,
  MODERATION_SIGNATURE,
  PUBLIC_KEY_HEX,
  SEED_BASE64URL,
  SEED_HEX,
} from "../support/published-vector.js";

const ENTRY_PAYLOAD =
  '{"bondAmount":"100 USDC","contentHash":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","data":{"license":"Apache-2.0","limits":{"maxPages":200,"timeoutSeconds":30},"runtime":"node"},"description":"Summarises PDF files — résumé included","entryDid":"did:reg:main:skill:pdf-summarizer@1.2.0","entryType":"skill","payloadType":"registry.entry.v1","publishedAt":"2026-11-21T10:00:00.000Z","publisherDid":"did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw","tags":["pdf","summarization"],"version":"1.2.0"}';
const ENTRY_PAYLOAD_SHA256 = "f799969311db2d7e8c377cb4d6597381531b14556ca087ae0e73bf3fe6ef008f";
const MINIMAL_ENTRY = {
  entryDid: "did:reg:main:agent:echo@0.1.0-beta.1",
  entryType: "agent",
  version: "0.1.0-beta.1",
  publisherDid: DID,
  publishedAt: "2026-01-02T03:04:05.678Z",
  contentHash: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
} as const satisfies EntrySigningFields;
const MINIMAL_PAYLOAD =
  '{"bondAmount":"","contentHash":"sha256:0000000000000000000000000000000000000000000000000000000000000000","data":{},"description":"","entryDid":"did:reg:main:agent:echo@0.1.0-beta.1","entryType":"agent","payloadType":"registry.entry.v1","publishedAt":"2026-01-02T03:04:05.678Z","publisherDid":"did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw","tags":[],"version":"0.1.0-beta.1"}';
const MINIMAL_SIGNATURE = "ed25519:xbbyhKmBAK5Ogtp7-VPpB4Kw3LQRDcwF2AHNbqQ5EG5GB0WeePQ-PhnDgmPPydiveJB31K4j_0GrhBXqp0-rCA";

const ENTRY_V2_PAYLOAD =
  '{"contentHash":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","data":{"limits":{"maxPages":200,"timeoutSeconds":30},"runtime":"node"},"description":"Summarises PDF files — résumé included","entryDid":"did:reg:main:skill:pdf-summarizer@1.2.0","entryType":"skill","homepage":"https://example.com/pdf-summarizer","license":"Apache-2.0 OR MIT","payloadType":"registry.entry.v2","publishedAt":"2026-11-21T10:00:00.000Z","publisherDid":"did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw","repository":"https://git.example.com/pdf-summarizer","tags":["pdf","summarization"],"version":"1.2.0"}';
const ENTRY_V2_PAYLOAD_SHA256 = "ece2bb993c01248a31674282995dbd8f7133690821d7407c41f605d11ad86e08";
const MINIMAL_V2_ENTRY = { ...MINIMAL_ENTRY, payloadType: "registry.entry.v2" } as const satisfies EntrySigningFields;
const MINIMAL_V2_PAYLOAD =
  '{"contentHash":"sha256:0000000000000000000000000000000000000000000000000000000000000000","entryDid":"did:reg:main:agent:echo@0.1.0-beta.1","entryType":"agent","payloadType":"registry.entry.v2","publishedAt":"2026-01-02T03:04:05.678Z","publisherDid":"did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw","version":"0.1.0-beta.1"}';
const MINIMAL_V2_SIGNATURE = "ed25519:cGcig9Styp6je2g-iS09_3FRNI4y2Tw2E8ghW6TYei8iGS-ka6mOl6y0_B21I0uBPiM2kHNa6m6kbzTVaAC_CA";

const REVOKED_DID = "did:reg:main:skill:pdf-summarizer@1.2.0";
const REVOKE_REASON = "superseded by 1.2.1: wrong page count";
const REVOKE_PAYLOAD =
  '{"entryDid":"did:reg:main:skill:pdf-summarizer@1.2.0","payloadType":"registry.revoke.v1","reason":"superseded by 1.2.1: wrong page count"}';
const REVOKE_PAYLOAD_SHA256 = "484b5d6f029f3aa374f1a79d8f7c1aae6ec52019f6169bf38e729a04e380f4f6";
const REVOKE_SIGNATURE = "ed25519:SeTVYV2DEmAn6TFJkv7LRlketc2yaVzYwoU3Fb_rxzfjJ-e1vtLhJ5S9YhXSNeF3Qe8h0rQ0kgBJA5P3UOgVBg";

const REVOKED_BASE_DID = "did:reg:main:skill:pdf-summarizer";
const REVOKE_ALL_REASON = "withdrawn: licence problem";
const REVOKE_ALL_PAYLOAD =
  '{"entryDid":"did:reg:main:skill:pdf-summarizer","payloadType":"registry.revoke.v1","reason":"withdrawn: licence problem"}';
const REVOKE_ALL_SIGNATURE = "ed25519:j9AFuZoVh9mlPSBn_uN3yoE6DFRgnJoVcsFq_8aNa9pBvicQxiKKKKPKeMn_GA5z5rQlgq5VEl0bbVFw78SpDw";

const LIFECYCLE_PAYLOAD =
  '{"action":"deprecate","by":"did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw","issuedAt":"2026-11-22T09:15:00.000Z","payloadType":"registry.lifecycle.v1","reason":"wrong page count on scanned PDFs: use 1.2.1","replacement":"did:reg:main:skill:pdf-summarizer@1.2.1","subject":"did:reg:main:skill:pdf-summarizer@1.2.0"}';
const LIFECYCLE_PAYLOAD_SHA256 = "9a6550eb1c1e13a934f477666630583b995ecbc01e05da71504ee9ccb993cd4d";
const MODERATION_PAYLOAD =
  '{"action":"remove","by":"did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw","issuedAt":"2026-11-23T14:30:00.000Z","note":"sends the PDFs it reads to a third-party host","payloadType":"registry.moderation.v1","policy":"malware","subject":"did:reg:main:skill:pdf-summarizer@1.2.0"}';
const MODERATION_PAYLOAD_SHA256 = "8d50cfef784748e38bd37aa979bdeb08505f630d85bb128c510b030ca529d636";

// RFC 8032 section 7.1, TEST 1: the key above signing the empty message.
const RFC8032_TEST1_SIGNATURE_HEX =
  "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

const seed = hexBytes(SEED_HEX);
const publicKey = hexBytes(PUBLIC_KEY_HEX);
const nodeVerifier = createSignatureVerifier();

/** The server's check: node:crypto over the payload, with the key inside publisherDid. */
async function serverAccepts(fields: EntrySigningFields, signature: string): Promise<boolean> {
  const bytes = parseSignature(signature);
  const key = ed25519KeyFromDid(fields.publisherDid);
  if ("error" in bytes || "error" in key) return false;
  return nodeVerifier.verify(key, entrySigningPayload(fields), bytes);
}

describe("Ed25519 wiring (RFC 8032 section 7.1, TEST 1)", () => {
  it("derives the RFC public key and signature for the empty message", async () => {
    expect(hex(await ed.getPublicKeyAsync(seed))).toBe(PUBLIC_KEY_HEX);
    expect(hex(await ed.signAsync(new Uint8Array(0), seed))).toBe(RFC8032_TEST1_SIGNATURE_HEX);
    expect((await keyPairFromSeed(seed)).publicKey).toEqual(publicKey);
  });

  it("is accepted by the node:crypto verifier and refused for another message", async () => {
    const signature = hexBytes(RFC8032_TEST1_SIGNATURE_HEX);
    expect(await nodeVerifier.verify(publicKey, new Uint8Array(0), signature)).toBe(true);
    expect(await nodeVerifier.verify(publicKey, new Uint8Array([0]), signature)).toBe(false);
  });

  it("round-trips the key through did:key", async () => {
    expect(didFromEd25519Key(publicKey)).toBe(DID);
    expect(ed25519KeyFromDid(DID)).toEqual(publicKey);
    expect((await keyPairFromSeed(seed)).did).toBe(DID);
    expect(decodePrivateKey(SEED_BASE64URL)).toEqual(seed);
  });
});

describe("published entry vector", () => {
  it("builds the documented canonical payload byte for byte", () => {
    const payload = entrySigningPayload(ENTRY);
    expect(new TextDecoder().decode(payload)).toBe(ENTRY_PAYLOAD);
    expect(payload).toEqual(new TextEncoder().encode(ENTRY_PAYLOAD));
    expect(payload.length).toBe(538);
    expect(sha256Hex(payload)).toBe(ENTRY_PAYLOAD_SHA256);
  });

  it("signs to the documented signature, which both verifiers accept", async () => {
    expect(await signEntry(ENTRY, seed)).toBe(ENTRY_SIGNATURE);
    expect(await serverAccepts(ENTRY, ENTRY_SIGNATURE)).toBe(true);
    expect(await verifyEntrySignature(ENTRY, ENTRY_SIGNATURE)).toBe(true);
  });

  it("encodes signatures exactly as the server's parser and formatter do", () => {
    const bytes = decodeSignature(ENTRY_SIGNATURE) as Uint8Array;
    expect(bytes).toEqual(Uint8Array.from(parseSignature(ENTRY_SIGNATURE) as Uint8Array));
    expect(encodeSignature(bytes)).toBe(formatSignature(bytes));
    expect(ENTRY_SIGNATURE.length).toBe("ed25519:".length + 86);
  });

  it("signs defaults for every absent optional field", async () => {
    expect(new TextDecoder().decode(entrySigningPayload(MINIMAL_ENTRY))).toBe(MINIMAL_PAYLOAD);
    expect(await signEntry(MINIMAL_ENTRY, seed)).toBe(MINIMAL_SIGNATURE);
    expect(await serverAccepts(MINIMAL_ENTRY, MINIMAL_SIGNATURE)).toBe(true);
    const explicitDefaults = { ...MINIMAL_ENTRY, description: "", tags: [], data: {}, bondAmount: "" };
    expect(await serverAccepts(explicitDefaults, MINIMAL_SIGNATURE)).toBe(true);
  });
});

describe("published v2 entry vector", () => {
  it("builds the documented canonical payload byte for byte: set fields only", () => {
    const payload = entrySigningPayload(ENTRY_V2);
    expect(new TextDecoder().decode(payload)).toBe(ENTRY_V2_PAYLOAD);
    expect(payload.length).toBe(623);
    expect(sha256Hex(payload)).toBe(ENTRY_V2_PAYLOAD_SHA256);
  });

  it("signs to the documented signature, which both verifiers accept, and v1 does not", async () => {
    expect(await signEntry(ENTRY_V2, seed)).toBe(ENTRY_V2_SIGNATURE);
    expect(await serverAccepts(ENTRY_V2, ENTRY_V2_SIGNATURE)).toBe(true);
    expect(await verifyEntrySignature(ENTRY_V2, ENTRY_V2_SIGNATURE)).toBe(true);
    const { homepage, repository, license, ...v1Fields } = ENTRY_V2;
    expect(await serverAccepts({ ...v1Fields, payloadType: "registry.entry.v1" }, ENTRY_V2_SIGNATURE)).toBe(false);
  });

  it("leaves every empty optional field out, so sending it empty or not at all signs the same", async () => {
    expect(new TextDecoder().decode(entrySigningPayload(MINIMAL_V2_ENTRY))).toBe(MINIMAL_V2_PAYLOAD);
    expect(await signEntry(MINIMAL_V2_ENTRY, seed)).toBe(MINIMAL_V2_SIGNATURE);
    const explicitEmpties = {
      ...MINIMAL_V2_ENTRY,
      description: "",
      tags: [],
      data: {},
      bondAmount: "",
      homepage: "",
      repository: "",
      license: "",
    };
    expect(await serverAccepts(explicitEmpties, MINIMAL_V2_SIGNATURE)).toBe(true);
  });

  it("covers each v2 field: changing one breaks the signature", async () => {
    for (const change of [{ homepage: "https://example.com/other" }, { repository: "" }, { license: "MIT" }, { bondAmount: "1 USDC" }]) {
      expect(await verifyEntrySignature({ ...ENTRY_V2, ...change }, ENTRY_V2_SIGNATURE), JSON.stringify(change)).toBe(false);
    }
  });
});

describe("what the entry signature covers", () => {
  const otherDid = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";
  const changes: ReadonlyArray<[string, Partial<Record<keyof EntrySigningFields, unknown>>]> = [
    ["entryDid", { entryDid: "did:reg:main:skill:pdf-summarizer@1.2.1" }],
    ["entryType", { entryType: "agent" }],
    ["version", { version: "1.2.1" }],
    ["publisherDid", { publisherDid: otherDid }],
    ["publishedAt", { publishedAt: "2026-11-21T10:00:00.001Z" }],
    ["description", { description: "Summarises PDF files — resume included" }],
    ["tags (order)", { tags: ["summarization", "pdf"] }],
    ["tags (absent)", { tags: undefined }],
    ["data (value)", { data: { ...ENTRY.data, runtime: "deno" } }],
    ["data (number)", { data: { ...ENTRY.data, limits: { maxPages: 201, timeoutSeconds: 30 } } }],
    ["contentHash", { contentHash: `sha256:${"f".repeat(64)}` }],
    ["bondAmount", { bondAmount: "100.0 USDC" }],
  ];

  it("uses a well-formed did:key as the other publisher", () => {
    expect(ed25519KeyFromDid(otherDid)).toBeInstanceOf(Uint8Array);
  });

  it.each(changes)("refuses the signature when %s changes", async (_name, change) => {
    const changed = { ...ENTRY, ...change } as EntrySigningFields;
    expect(await serverAccepts(changed, ENTRY_SIGNATURE)).toBe(false);
    expect(await verifyEntrySignature(changed, ENTRY_SIGNATURE)).toBe(false);
  });

  it("refuses the signature when payloadType changes", async () => {
    const otherType = ENTRY_PAYLOAD.replace('"registry.entry.v1"', '"registry.entry.v2"');
    const signature = parseSignature(ENTRY_SIGNATURE) as Uint8Array;
    expect(await nodeVerifier.verify(publicKey, new TextEncoder().encode(otherType), signature)).toBe(false);
    expect(await nodeVerifier.verify(publicKey, new TextEncoder().encode(ENTRY_PAYLOAD), signature)).toBe(true);
  });

  it.each([
    "2026-11-21T10:00:00.000Z",
    "2026-11-21T10:00:00.0Z",
    "2026-11-21T10:00:00+00:00",
    "2026-11-21t10:00:00z",
    "2026-11-21T11:00:00+01:00",
  ])("still verifies with publishedAt written as %s", async (publishedAt) => {
    const rewritten = { ...ENTRY, publishedAt };
    expect(await serverAccepts(rewritten, ENTRY_SIGNATURE)).toBe(true);
    expect(await verifyEntrySignature(rewritten, ENTRY_SIGNATURE)).toBe(true);
  });

  it("still verifies when data keys come in another order or unsigned fields are added", async () => {
    const reordered = {
      ...ENTRY,
      data: { limits: { timeoutSeconds: 30, maxPages: 200 }, license: "Apache-2.0", runtime: "node" },
      signature: ENTRY_SIGNATURE,
      sequence: "42",
    };
    expect(await serverAccepts(reordered, ENTRY_SIGNATURE)).toBe(true);
    expect(await verifyEntrySignature(reordered, ENTRY_SIGNATURE)).toBe(true);
  });

  it("refuses a signature over other bytes", async () => {
    const overRevocation = await signRevocation(REVOKED_DID, REVOKE_REASON, seed);
    const overMinimal = MINIMAL_SIGNATURE;
    for (const signature of [overRevocation, overMinimal]) {
      expect(await serverAccepts(ENTRY, signature)).toBe(false);
      expect(await verifyEntrySignature(ENTRY, signature)).toBe(false);
    }
  });

  it("refuses the right bytes signed by another key", async () => {
    const other = await keyPairFromSeed(new Uint8Array(32).fill(7));
    const signature = await signEntry(ENTRY, other.privateKey);
    expect(await serverAccepts(ENTRY, signature)).toBe(false);
    expect(await verifyEntrySignature(ENTRY, signature)).toBe(false);
  });

  it("refuses a tampered or malformed signature without throwing", async () => {
    const flipped = flipBit(ENTRY_SIGNATURE);
    for (const signature of [flipped, "", "ed25519:", ENTRY_SIGNATURE.slice(0, -1), `${ENTRY_SIGNATURE}=`]) {
      expect(await verifyEntrySignature(ENTRY, signature)).toBe(false);
    }
    expect(await serverAccepts(ENTRY, flipped)).toBe(false);
    const nonZeroSpareBits = `${ENTRY_SIGNATURE.slice(0, -1)}B`; // "A" -> "B" sets a spare bit
    expect(decodeSignature(nonZeroSpareBits)).toHaveProperty("error");
    expect(parseSignature(nonZeroSpareBits)).toHaveProperty("error");
  });
});

describe("published revocation vectors", () => {
  it("builds the documented payloads and signatures", async () => {
    const payload = revocationSigningPayload(REVOKED_DID, REVOKE_REASON);
    expect(new TextDecoder().decode(payload)).toBe(REVOKE_PAYLOAD);
    expect(payload.length).toBe(138);
    expect(sha256Hex(payload)).toBe(REVOKE_PAYLOAD_SHA256);
    expect(await signRevocation(REVOKED_DID, REVOKE_REASON, seed)).toBe(REVOKE_SIGNATURE);
    const all = revocationSigningPayload(REVOKED_BASE_DID, REVOKE_ALL_REASON);
    expect(new TextDecoder().decode(all)).toBe(REVOKE_ALL_PAYLOAD);
    expect(await signRevocation(REVOKED_BASE_DID, REVOKE_ALL_REASON, seed)).toBe(REVOKE_ALL_SIGNATURE);
  });

  it("is accepted by node:crypto with the revoker's key", async () => {
    const payload = revocationSigningPayload(REVOKED_DID, REVOKE_REASON);
    expect(await nodeVerifier.verify(publicKey, payload, parseSignature(REVOKE_SIGNATURE) as Uint8Array)).toBe(true);
  });

  it("binds the DID as addressed and the reason", async () => {
    expect(await verifyRevocationSignature(REVOKED_DID, REVOKE_REASON, REVOKE_SIGNATURE, DID)).toBe(true);
    const misuses: Array<[string, string, string]> = [
      [REVOKED_BASE_DID, REVOKE_REASON, DID], // one version's revocation replayed on every version
      [REVOKED_DID, "other reason", DID],
      [REVOKED_DID, REVOKE_REASON, "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"],
    ];
    for (const [entryDid, reason, signer] of misuses) {
      expect(await verifyRevocationSignature(entryDid, reason, REVOKE_SIGNATURE, signer)).toBe(false);
    }
  });
});

describe("published lifecycle and moderation vectors", () => {
  /** node:crypto over the payload, with the key of `by`: the check the server makes. */
  async function nodeAccepts(payload: Uint8Array, signature: string, signer: string): Promise<boolean> {
    const bytes = parseSignature(signature);
    const key = ed25519KeyFromDid(signer);
    if ("error" in bytes || "error" in key) return false;
    return nodeVerifier.verify(key, payload, bytes);
  }

  /** The SDK's check on raw bytes: the strict verifier of src/sdk/signing.ts. */
  async function sdkAccepts(payload: Uint8Array, signature: string, signer: string): Promise<boolean> {
    const bytes = decodeSignature(signature);
    const key = ed25519KeyFromDid(signer);
    if ("error" in bytes || "error" in key) return false;
    return verifyEd25519(bytes, payload, key);
  }

  /** A log record of the request, as docs/feed.md shapes it: the payload's members and `signature`. */
  function recordOf(kind: LogRecord["kind"], payload: string, signature: string): LogRecord {
    return {
      index: "7",
      kind,
      entries: [],
      request: { ...(JSON.parse(payload) as Record<string, string>), signature },
      latestVersion: "1.2.1",
      loggedAt: "2026-11-23T14:30:00.120Z",
    };
  }

  it("builds the documented lifecycle payload byte for byte", () => {
    const payload = lifecycleSigningPayload(LIFECYCLE);
    expect(new TextDecoder().decode(payload)).toBe(LIFECYCLE_PAYLOAD);
    expect(payload.length).toBe(325);
    expect(sha256Hex(payload)).toBe(LIFECYCLE_PAYLOAD_SHA256);
  });

  it("builds the documented moderation payload byte for byte", () => {
    const payload = moderationSigningPayload(MODERATION);
    expect(new TextDecoder().decode(payload)).toBe(MODERATION_PAYLOAD);
    expect(payload.length).toBe(286);
    expect(sha256Hex(payload)).toBe(MODERATION_PAYLOAD_SHA256);
  });

  it("signs to the documented signatures with the SDK, which node:crypto and the SDK verifier accept", async () => {
    expect(await signLifecycle(LIFECYCLE, seed)).toBe(LIFECYCLE_SIGNATURE);
    expect(await signModeration(MODERATION, seed)).toBe(MODERATION_SIGNATURE);
    for (const [payload, signature] of [
      [lifecycleSigningPayload(LIFECYCLE), LIFECYCLE_SIGNATURE],
      [moderationSigningPayload(MODERATION), MODERATION_SIGNATURE],
    ] as const) {
      expect(await nodeAccepts(payload, signature, DID)).toBe(true);
      expect(await sdkAccepts(payload, signature, DID)).toBe(true);
    }
  });

  it("is rebuilt from a log record's request by the SDK's record check", async () => {
    await expect(verifyRecordSignatures(recordOf("entry.lifecycle", LIFECYCLE_PAYLOAD, LIFECYCLE_SIGNATURE))).resolves.toBeUndefined();
    await expect(verifyRecordSignatures(recordOf("entry.moderation", MODERATION_PAYLOAD, MODERATION_SIGNATURE))).resolves.toBeUndefined();
    // A request under the other kind, or with one member changed, does not pass.
    await expect(verifyRecordSignatures(recordOf("entry.moderation", LIFECYCLE_PAYLOAD, LIFECYCLE_SIGNATURE))).rejects.toThrow(/of type/);
    const changed = LIFECYCLE_PAYLOAD.replace('"reason":"wrong', '"reason":"Wrong');
    await expect(verifyRecordSignatures(recordOf("entry.lifecycle", changed, LIFECYCLE_SIGNATURE))).rejects.toThrow(/does not verify/);
  });

  it("binds every member: subject as addressed, action, text, replacement, by and issuedAt", async () => {
    const otherDid = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";
    const lifecycleChanges = [
      { subject: "did:reg:main:skill:pdf-summarizer" },
      { action: "yank" },
      { reason: "wrong page count on scanned PDFs" },
      { replacement: "" },
      { by: otherDid },
      { issuedAt: "2026-11-22T09:15:00.001Z" },
    ] as const;
    for (const change of lifecycleChanges) {
      const fields = { ...LIFECYCLE, ...change };
      const payload = lifecycleSigningPayload(fields);
      expect(await nodeAccepts(payload, LIFECYCLE_SIGNATURE, DID), JSON.stringify(change)).toBe(false);
      expect(await sdkAccepts(payload, LIFECYCLE_SIGNATURE, fields.by), JSON.stringify(change)).toBe(false);
    }
    const moderationChanges = [
      { subject: "did:reg:main:skill:pdf-summarizer" },
      { action: "quarantine" },
      { policy: "other" },
      { note: "" },
    ] as const;
    for (const change of moderationChanges) {
      const payload = moderationSigningPayload({ ...MODERATION, ...change });
      expect(await nodeAccepts(payload, MODERATION_SIGNATURE, DID), JSON.stringify(change)).toBe(false);
    }
    // The same members under the other payload type sign other bytes.
    expect(
      await nodeAccepts(new TextEncoder().encode(LIFECYCLE_PAYLOAD.replace("lifecycle.v1", "moderation.v1")), LIFECYCLE_SIGNATURE, DID),
    ).toBe(false);
  });

  describe("the registry's action service, on the documented request bodies", () => {
    // The signature is checked before anything is read: an empty registry answers not_found for a
    // request whose signature verified, and invalid_argument naming signature for one that did not.
    const repository = { applyAction: async () => undefined } as unknown as EntryRepository;
    const serviceAt = (issuedAt: string) => createEntryActionService({ repository, clock: () => new Date(issuedAt) });
    const lifecycleBody = {
      did: LIFECYCLE.subject,
      action: LIFECYCLE.action,
      reason: LIFECYCLE.reason,
      replacement: LIFECYCLE.replacement,
      issuedAt: LIFECYCLE.issuedAt,
      signature: LIFECYCLE_SIGNATURE,
    };
    const moderationBody = {
      did: MODERATION.subject,
      action: MODERATION.action,
      policy: MODERATION.policy,
      note: MODERATION.note,
      issuedAt: MODERATION.issuedAt,
      signature: MODERATION_SIGNATURE,
    };
    const controller = { subject: DID, scopes: ["registry.publish.skill"] };
    const moderator = { subject: DID, scopes: ["registry.admin"] };
    const withReplacementFound = {
      applyAction: async () => undefined,
      findVersion: async () => ({}),
      findOwner: async () => ({ publisherDid: DID, entryType: "skill" }),
    } as unknown as EntryRepository;

    it("accepts both signatures, taking by from the token's subject", async () => {
      const lifecycle = createEntryActionService({ repository: withReplacementFound, clock: () => new Date(LIFECYCLE.issuedAt) });
      await expect(lifecycle.changeLifecycle(controller, lifecycleBody)).rejects.toBeInstanceOf(NotFoundError);
      await expect(serviceAt(MODERATION.issuedAt).moderate(moderator, moderationBody)).rejects.toBeInstanceOf(NotFoundError);
    });

    it("refuses them when the token's subject is another key", async () => {
      const other = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";
      const refused = serviceAt(MODERATION.issuedAt).moderate({ ...moderator, subject: other }, moderationBody);
      await expect(refused).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(refused).rejects.toThrow(/signature/);
    });
  });
});

describe("the docs publish the same vector", () => {
  const docs = readFileSync(new URL("../../docs/signatures.md", import.meta.url), "utf8");

  it.each([
    SEED_HEX,
    SEED_BASE64URL,
    PUBLIC_KEY_HEX,
    DID,
    ENTRY_PAYLOAD,
    ENTRY_PAYLOAD_SHA256,
    ENTRY_SIGNATURE,
    MINIMAL_PAYLOAD,
    MINIMAL_SIGNATURE,
    REVOKE_PAYLOAD,
    REVOKE_PAYLOAD_SHA256,
    REVOKE_SIGNATURE,
    REVOKE_ALL_PAYLOAD,
    REVOKE_ALL_SIGNATURE,
    ENTRY_V2_PAYLOAD,
    ENTRY_V2_PAYLOAD_SHA256,
    ENTRY_V2_SIGNATURE,
    MINIMAL_V2_PAYLOAD,
    MINIMAL_V2_SIGNATURE,
    LIFECYCLE_PAYLOAD,
    LIFECYCLE_PAYLOAD_SHA256,
    LIFECYCLE_SIGNATURE,
    MODERATION_PAYLOAD,
    MODERATION_PAYLOAD_SHA256,
    MODERATION_SIGNATURE,
  ])("docs/signatures.md contains %s", (value) => {
    expect(docs).toContain(value);
  });

  it("documents the entries exactly as the test signs them", () => {
    const documented = /### Entry\n[\s\S]*?```json\n([\s\S]*?)```/.exec(docs)?.[1];
    expect(JSON.parse(documented ?? "null")).toEqual(ENTRY);
    const documentedV2 = /### Entry, v2\n[\s\S]*?```json\n([\s\S]*?)```/.exec(docs)?.[1];
    expect(JSON.parse(documentedV2 ?? "null")).toEqual(ENTRY_V2);
  });

  it("documents the lifecycle and moderation bodies exactly as the test signs them, without by", () => {
    const body = (heading: string) =>
      JSON.parse(new RegExp(`### ${heading}\\n[\\s\\S]*?\`\`\`json\\n([\\s\\S]*?)\`\`\``).exec(docs)?.[1] ?? "null");
    const { subject: _l, by: _lb, ...lifecycle } = LIFECYCLE;
    expect(body("Deprecation with a replacement")).toEqual({ ...lifecycle, signature: LIFECYCLE_SIGNATURE });
    const { subject: _m, by: _mb, ...moderation } = MODERATION;
    expect(body("Moderation: removal")).toEqual({ ...moderation, signature: MODERATION_SIGNATURE });
    expect(docs).toContain(`/v1/entries/${LIFECYCLE.subject.replace("@", "%40")}/lifecycle`);
    expect(docs).toContain(`/v1/entries/${MODERATION.subject.replace("@", "%40")}/moderation`);
  });
});

describe("registry key / registry sign (in-process)", () => {
  interface Captured extends KeyCommandIo {
    out: string;
    err: string;
  }

  function captureIo(files: Record<string, string> = {}, extra: Partial<KeyCommandIo> = {}): Captured {
    const io: Captured = {
      out: "",
      err: "",
      stdout: (text) => {
        io.out += text;
      },
      stderr: (text) => {
        io.err += text;
      },
      readFile: async (path) => {
        const contents = files[path];
        if (contents === undefined) throw new Error(`ENOENT: no such file, open '${path}'`);
        return contents;
      },
      env: {},
      ...extra,
    };
    return io;
  }

  it("key generate prints a usable key pair", async () => {
    const io = captureIo();
    expect(await runKeyCommand(["key", "generate"], io)).toBe(0);
    const printed = JSON.parse(io.out) as { did: string; privateKey: string; publicKey: string };
    const key = await keyPairFromSeed(decodePrivateKey(printed.privateKey) as Uint8Array);
    expect(key.did).toBe(printed.did);
    expect(printed.did).toMatch(/^did:key:z6Mk/);
    expect(printed.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("sign entry prints the entry as written with the documented signature", async () => {
    const io = captureIo({ "entry.json": JSON.stringify(ENTRY_V2) });
    const code = await runKeyCommand(["sign", "entry", "--key", SEED_BASE64URL, "--file", "entry.json"], io);
    expect(io.err).toBe("");
    expect(code).toBe(0);
    const signed = JSON.parse(io.out) as EntrySigningFields & { signature: string };
    expect(signed).toEqual({ ...ENTRY_V2, signature: ENTRY_V2_SIGNATURE });
    expect(signed.publishedAt).toBe("2026-11-21T10:00:00Z");
    expect(await serverAccepts(signed, signed.signature)).toBe(true);
  });

  it("sign entry reads stdin, the key from the environment, and replaces an old signature", async () => {
    const io = captureIo(
      {},
      {
        readStdin: async () => JSON.stringify({ ...MINIMAL_ENTRY, signature: "ed25519:stale" }),
        env: { REGISTRY_SIGNING_KEY: SEED_BASE64URL },
      },
    );
    expect(await runKeyCommand(["sign", "entry", "--file", "-"], io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ ...MINIMAL_V2_ENTRY, signature: MINIMAL_V2_SIGNATURE });
  });

  it("sign entry signs v2 unless the file names its payload, and keeps v1 when it does", async () => {
    for (const [entry, expected] of [
      [
        { ...ENTRY_V2, payloadType: undefined },
        { ...ENTRY_V2, signature: ENTRY_V2_SIGNATURE },
      ],
      [
        { ...ENTRY, payloadType: "registry.entry.v1" },
        { ...ENTRY, payloadType: "registry.entry.v1", signature: ENTRY_SIGNATURE },
      ],
    ] as const) {
      const io = captureIo({ "entry.json": JSON.stringify(entry) });
      expect(await runKeyCommand(["sign", "entry", "--key", SEED_BASE64URL, "--file", "entry.json"], io)).toBe(0);
      expect(JSON.parse(io.out)).toEqual(expected);
    }
  });

  it("sign entry takes @path key files: the bare seed or the JSON of key generate", async () => {
    const generated = JSON.stringify({ did: DID, privateKey: SEED_BASE64URL, publicKey: "x" });
    const files = {
      "entry.json": JSON.stringify(ENTRY_V2),
      "seed.txt": `${SEED_BASE64URL}\n`,
      "key.json": generated,
    };
    for (const key of ["@seed.txt", "@key.json"]) {
      const io = captureIo(files);
      expect(await runKeyCommand(["sign", "entry", "--key", key, "--file", "entry.json"], io)).toBe(0);
      expect((JSON.parse(io.out) as { signature: string }).signature).toBe(ENTRY_V2_SIGNATURE);
    }
  });

  it("a freshly generated key signs an entry the server accepts", async () => {
    const generate = captureIo();
    await runKeyCommand(["key", "generate"], generate);
    const { did, privateKey } = JSON.parse(generate.out) as { did: string; privateKey: string };
    const io = captureIo({ "entry.json": JSON.stringify({ ...ENTRY, publisherDid: did }) });
    expect(await runKeyCommand(["sign", "entry", "--key", privateKey, "--file", "entry.json"], io)).toBe(0);
    const signed = JSON.parse(io.out) as EntrySigningFields & { signature: string };
    expect(await serverAccepts(signed, signed.signature)).toBe(true);
  });

  it("sign revoke prints the DELETE body with the documented signature", async () => {
    const io = captureIo();
    const args = ["sign", "revoke", "--key", SEED_BASE64URL, "--did", REVOKED_DID, "--reason", REVOKE_REASON];
    expect(await runKeyCommand(args, io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ reason: REVOKE_REASON, signature: REVOKE_SIGNATURE });
  });

  it.each([
    ["a key that is not the publisher's", ["--key", encodePrivateKey(new Uint8Array(32).fill(1))], { ...ENTRY }, /publisherDid/],
    ["an entry without contentHash", ["--key", SEED_BASE64URL], { ...ENTRY, contentHash: undefined }, /contentHash/],
    ["an unreadable publishedAt", ["--key", SEED_BASE64URL], { ...ENTRY, publishedAt: "soon" }, /publishedAt/],
    ["a key that is not a seed", ["--key", "not-a-key"], { ...ENTRY }, /--key/],
  ])("sign entry fails with exit code 1 on %s", async (_name, keyArgs, entry, message) => {
    const io = captureIo({ "entry.json": JSON.stringify(entry) });
    expect(await runKeyCommand(["sign", "entry", ...keyArgs, "--file", "entry.json"], io)).toBe(1);
    expect(io.err).toMatch(message);
    expect(io.out).toBe("");
  });

  it.each([
    ["no key", ["sign", "entry", "--file", "entry.json"], /REGISTRY_SIGNING_KEY/],
    ["no file", ["sign", "entry", "--key", SEED_BASE64URL], /--file/],
    ["an unknown option", ["sign", "revoke", "--key", SEED_BASE64URL, "--did", REVOKED_DID, "--why", "x"], /--why/],
    ["no reason", ["sign", "revoke", "--key", SEED_BASE64URL, "--did", REVOKED_DID], /--reason/],
    ["an unknown command", ["key", "rotate"], /unknown command/],
  ])("answers %s with exit code 2 and the usage", async (_name, args, message) => {
    const io = captureIo({ "entry.json": JSON.stringify(ENTRY) });
    expect(await runKeyCommand(args, io)).toBe(2);
    expect(io.err).toMatch(message);
    expect(io.err).toContain("Usage:");
  });
});

function hexBytes(text: string): Uint8Array {
  return Uint8Array.from(text.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function sha256Hex(bytes: Uint8Array): string {
  // node:crypto is fine here: the test runs on Node, only src/sdk must stay browser-safe.
  return createHash("sha256").update(bytes).digest("hex");
}

function flipBit(signature: string): string {
  const bytes = parseSignature(signature) as Uint8Array;
  const flipped = Uint8Array.from(bytes);
  flipped[10] = (flipped[10] ?? 0) ^ 1;
  return formatSignature(flipped);
}
