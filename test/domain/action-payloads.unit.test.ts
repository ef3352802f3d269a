import { describe, expect, it } from "vitest";
import {
  ACTION_PAYLOAD_TYPES,
  LIFECYCLE_ACTIONS,
  LIFECYCLE_PAYLOAD_TYPE,
  lifecycleSigningPayload,
  MODERATION_ACTIONS,
  MODERATION_PAYLOAD_TYPE,
  MODERATION_POLICIES,
  moderationSigningPayload,
  NAME_ACTIONS,
  UNDO_ACTIONS,
} from "../../src/domain/action-payloads.js";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const BY = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";

describe("the lifecycle payload", () => {
  it("is the JCS of exactly the contract's members, keys sorted, as UTF-8 (test vector)", () => {
    const bytes = lifecycleSigningPayload({
      subject: "did:reg:main:skill:web-search@1.2.0",
      action: "deprecate",
      reason: 'Use 2.x: "faster", naïve ✓',
      replacement: "did:reg:main:skill:web-search@2.0.0",
      by: BY,
      issuedAt: "2026-11-21T10:00:00.000Z",
    });
    expect(text(bytes)).toBe(
      '{"action":"deprecate","by":"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK","issuedAt":"2026-11-21T10:00:00.000Z",' +
        '"payloadType":"registry.lifecycle.v1","reason":"Use 2.x: \\"faster\\", naïve ✓",' +
        '"replacement":"did:reg:main:skill:web-search@2.0.0","subject":"did:reg:main:skill:web-search@1.2.0"}',
    );
    // UTF-8, not UTF-16 or escapes: "ï" is two bytes, "✓" three.
    expect(bytes.length).toBe(new TextEncoder().encode(text(bytes)).length);
    expect([...bytes.slice(0, 2)]).toEqual([0x7b, 0x22]);
  });

  it('keeps every key when a text is empty, as ""', () => {
    const payload = JSON.parse(
      text(lifecycleSigningPayload({ subject: "did:reg:main:skill:a", action: "unyank", by: BY, issuedAt: "2026-11-21T10:00:00.000Z" })),
    );
    expect(payload).toEqual({
      payloadType: "registry.lifecycle.v1",
      subject: "did:reg:main:skill:a",
      action: "unyank",
      reason: "",
      replacement: "",
      by: BY,
      issuedAt: "2026-11-21T10:00:00.000Z",
    });
  });

  it("signs issuedAt exactly as given, not re-formatted", () => {
    const payload = JSON.parse(
      text(
        lifecycleSigningPayload({ subject: "did:reg:main:skill:a", action: "yank", reason: "x", by: BY, issuedAt: "2026-11-21T10:00:00Z" }),
      ),
    );
    expect(payload.issuedAt).toBe("2026-11-21T10:00:00Z");
  });
});

describe("the moderation payload", () => {
  it("is the JCS of exactly the contract's members, keys sorted, as UTF-8 (test vector)", () => {
    const bytes = moderationSigningPayload({
      subject: "did:reg:main:skill:web-search",
      action: "quarantine",
      policy: "malware",
      note: "Reported: exfiltrates tokens",
      by: BY,
      issuedAt: "2026-11-21T10:00:00.123Z",
    });
    expect(text(bytes)).toBe(
      '{"action":"quarantine","by":"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK","issuedAt":"2026-11-21T10:00:00.123Z",' +
        '"note":"Reported: exfiltrates tokens","payloadType":"registry.moderation.v1","policy":"malware","subject":"did:reg:main:skill:web-search"}',
    );
  });

  it('keeps every key when a text is empty, as ""', () => {
    const payload = JSON.parse(
      text(
        moderationSigningPayload({
          subject: "did:reg:main:skill:a@1.0.0",
          action: "unquarantine",
          by: BY,
          issuedAt: "2026-11-21T10:00:00.000Z",
        }),
      ),
    );
    expect(Object.keys(payload).sort()).toEqual(["action", "by", "issuedAt", "note", "payloadType", "policy", "subject"]);
    expect(payload).toMatchObject({ payloadType: MODERATION_PAYLOAD_TYPE, policy: "", note: "" });
  });
});

describe("the action lists", () => {
  it("are the contract's, in its order", () => {
    expect(LIFECYCLE_PAYLOAD_TYPE).toBe("registry.lifecycle.v1");
    expect(ACTION_PAYLOAD_TYPES).toEqual(["registry.lifecycle.v1", "registry.moderation.v1"]);
    expect(LIFECYCLE_ACTIONS).toEqual(["deprecate", "undeprecate", "yank", "unyank", "archive", "unarchive"]);
    expect(NAME_ACTIONS).toEqual(["archive", "unarchive"]);
    expect(UNDO_ACTIONS).toEqual(["undeprecate", "unyank", "unarchive"]);
    expect(MODERATION_ACTIONS).toEqual(["quarantine", "unquarantine", "remove"]);
    expect(MODERATION_POLICIES).toEqual(["malware", "phishing", "impersonation", "spam", "legal", "other"]);
  });
});
