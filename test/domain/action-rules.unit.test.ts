import { describe, expect, it } from "vitest";
import { FailedPreconditionError, InvalidArgumentError } from "../../src/errors.js";
import {
  ACTION_LIMITS,
  assertLaterIssuedAt,
  isLaterIssuedAt,
  issuedAtProblem,
  issuedAtScope,
  type LifecycleRequestInput,
  type ModerationRequestInput,
  validateLifecycleRequest,
  validateModerationRequest,
} from "../../src/domain/action-rules.js";
import { LIFECYCLE_PAYLOAD_TYPE, MODERATION_PAYLOAD_TYPE } from "../../src/domain/action-payloads.js";

const NOW = new Date("2026-11-21T10:00:00.000Z");
const ISSUED = "2026-11-21T09:59:30.000Z";
const NAME = "did:reg:main:skill:web-search";
const VERSIONED = `${NAME}@1.2.0`;
const EMOJI = "\u{1F600}"; // one code point, two UTF-16 units

const lifecycle = (fields: LifecycleRequestInput) =>
  validateLifecycleRequest({ did: VERSIONED, action: "yank", reason: "broken build", issuedAt: ISSUED, ...fields }, { now: NOW });
const moderation = (fields: ModerationRequestInput) =>
  validateModerationRequest(
    { did: VERSIONED, action: "quarantine", policy: "malware", note: "reported", issuedAt: ISSUED, ...fields },
    { now: NOW },
  );

/** The violations a call throws, as "field: description". */
function violations(call: () => unknown): string[] {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return (error as InvalidArgumentError).violations.map((v) => `${v.field}: ${v.description}`);
  }
  throw new Error("expected an InvalidArgumentError");
}

const fields = (call: () => unknown) => violations(call).map((v) => v.slice(0, v.indexOf(":")));

describe("a lifecycle request", () => {
  it("passes with each action and returns its fields typed", () => {
    expect(lifecycle({ action: "deprecate", replacement: `${NAME}@2.0.0` })).toEqual({
      subject: VERSIONED,
      did: expect.objectContaining({ baseDid: NAME, version: expect.objectContaining({ version: "1.2.0" }) }),
      action: "deprecate",
      reason: "broken build",
      replacement: `${NAME}@2.0.0`,
      issuedAt: ISSUED,
    });
    for (const action of ["undeprecate", "yank", "unyank"]) expect(lifecycle({ action }).action).toBe(action);
    for (const action of ["archive", "unarchive"]) expect(lifecycle({ did: NAME, action }).subject).toBe(NAME);
  });

  it("names did when it is missing or malformed", () => {
    expect(violations(() => lifecycle({ did: "" }))).toEqual(["did: is required"]);
    expect(fields(() => lifecycle({ did: "did:reg:main:skill:Web" }))).toEqual(["did"]);
    expect(fields(() => lifecycle({ did: `${NAME}@1.0` }))).toEqual(["did"]);
  });

  it("names action when it is missing or not one of the six", () => {
    expect(violations(() => lifecycle({ action: "" }))).toEqual(["action: is required"]);
    expect(violations(() => lifecycle({ action: "delete" }))).toEqual([
      "action: must be one of: deprecate, undeprecate, yank, unyank, archive, unarchive",
    ]);
  });

  it("takes archive and unarchive only on a bare DID, naming did", () => {
    expect(violations(() => lifecycle({ action: "archive" }))).toEqual([
      "did: archive acts on a name: address it by its bare DID, without @version",
    ]);
    expect(fields(() => lifecycle({ action: "unarchive", reason: "" }))).toEqual(["did"]);
    expect(lifecycle({ did: NAME, action: "yank" }).did.version).toBeUndefined();
  });

  it("requires a reason for deprecate, yank and archive, and lets the undo actions leave it empty", () => {
    expect(violations(() => lifecycle({ action: "deprecate", reason: "" }))).toEqual(["reason: is required"]);
    expect(violations(() => lifecycle({ action: "yank", reason: undefined }))).toEqual(["reason: is required"]);
    expect(violations(() => lifecycle({ did: NAME, action: "archive", reason: "" }))).toEqual(["reason: is required"]);
    expect(lifecycle({ action: "undeprecate", reason: "" }).reason).toBe("");
    expect(lifecycle({ action: "unyank", reason: undefined }).reason).toBe("");
    expect(lifecycle({ did: NAME, action: "unarchive", reason: "" }).reason).toBe("");
  });

  it("counts the reason's characters as code points, up to 500", () => {
    expect(lifecycle({ reason: EMOJI.repeat(ACTION_LIMITS.reasonChars) }).reason).toHaveLength(1000);
    expect(lifecycle({ reason: "x".repeat(500) }).reason).toHaveLength(500);
    expect(violations(() => lifecycle({ reason: "x".repeat(501) }))).toEqual(["reason: must be at most 500 characters"]);
    expect(violations(() => lifecycle({ action: "unyank", reason: `${EMOJI.repeat(500)}x` }))).toEqual([
      "reason: must be at most 500 characters",
    ]);
  });

  it("refuses a reason Postgres could not store as signed", () => {
    expect(fields(() => lifecycle({ reason: "a\u0000b" }))).toEqual(["reason"]);
    expect(fields(() => lifecycle({ reason: "a\uD800b" }))).toEqual(["reason"]);
  });

  it("takes a replacement only with deprecate, a well-formed entry DID with or without version", () => {
    expect(lifecycle({ action: "deprecate", replacement: "did:reg:main:agent:other" }).replacement).toBe("did:reg:main:agent:other");
    expect(lifecycle({ action: "deprecate" }).replacement).toBe("");
    expect(violations(() => lifecycle({ action: "yank", replacement: `${NAME}@2.0.0` }))).toEqual([
      "replacement: is allowed only with deprecate",
    ]);
    expect(fields(() => lifecycle({ action: "undeprecate", replacement: NAME }))).toEqual(["replacement"]);
    expect(fields(() => lifecycle({ action: "deprecate", replacement: "https://example.com" }))).toEqual(["replacement"]);
    expect(fields(() => lifecycle({ action: "deprecate", replacement: `${NAME}@2.0.0+build` }))).toEqual(["replacement"]);
  });

  it("names issuedAt when it is missing, not in toISOString() form, or more than 5 minutes off", () => {
    expect(violations(() => lifecycle({ issuedAt: "" }))).toEqual(["issuedAt: is required"]);
    for (const form of [
      "2026-11-21T09:59:30Z",
      "2026-11-21T09:59:30.0Z",
      "2026-11-21T09:59:30.000000Z",
      "2026-11-21T09:59:30.000+00:00",
      "2026-11-21t09:59:30.000z",
      "2026-11-21 09:59:30.000Z",
      "1795255170000",
    ]) {
      expect(
        fields(() => lifecycle({ issuedAt: form })),
        form,
      ).toEqual(["issuedAt"]);
    }
    expect(issuedAtProblem("2026-02-30T10:00:00.000Z", new Date("2026-02-30T10:00:00.000Z"))).toMatch(/toISOString/);
    expect(violations(() => lifecycle({ issuedAt: "2026-11-21T10:05:00.001Z" }))).toEqual([
      "issuedAt: must be within 5 minutes of the registry's clock",
    ]);
    expect(fields(() => lifecycle({ issuedAt: "2026-11-21T09:54:59.999Z" }))).toEqual(["issuedAt"]);
    expect(lifecycle({ issuedAt: "2026-11-21T10:05:00.000Z" }).issuedAt).toBe("2026-11-21T10:05:00.000Z");
    expect(lifecycle({ issuedAt: "2026-11-21T09:55:00.000Z" }).issuedAt).toBe("2026-11-21T09:55:00.000Z");
  });

  it("reports every faulty field at once", () => {
    expect(fields(() => validateLifecycleRequest({}, { now: NOW }))).toEqual(["did", "action", "reason", "issuedAt"]);
  });
});

describe("a moderation request", () => {
  it("passes with each action and returns its fields typed", () => {
    expect(moderation({})).toEqual({
      subject: VERSIONED,
      did: expect.objectContaining({ baseDid: NAME }),
      action: "quarantine",
      policy: "malware",
      note: "reported",
      issuedAt: ISSUED,
    });
    expect(moderation({ did: NAME, action: "remove", policy: "legal" }).subject).toBe(NAME);
    expect(moderation({ action: "unquarantine", policy: "", note: "false positive" }).policy).toBe("");
    expect(moderation({ action: "unquarantine", policy: "spam" }).policy).toBe("spam");
  });

  it("names action when it is missing or not one of the three", () => {
    expect(violations(() => moderation({ action: "" }))).toEqual(["action: is required"]);
    expect(violations(() => moderation({ action: "delete" }))).toEqual(["action: must be one of: quarantine, unquarantine, remove"]);
  });

  it("requires a policy of the list, empty only to lift a quarantine", () => {
    expect(violations(() => moderation({ policy: "" }))).toEqual(["policy: is required"]);
    expect(violations(() => moderation({ action: "remove", policy: undefined }))).toEqual(["policy: is required"]);
    expect(violations(() => moderation({ policy: "Malware" }))).toEqual([
      "policy: must be one of: malware, phishing, impersonation, spam, legal, other",
    ]);
    expect(fields(() => moderation({ action: "unquarantine", policy: "abuse" }))).toEqual(["policy"]);
  });

  it("requires a note of 1-1000 code points, also to lift a quarantine", () => {
    expect(violations(() => moderation({ note: "" }))).toEqual(["note: is required"]);
    expect(violations(() => moderation({ action: "unquarantine", policy: "", note: undefined }))).toEqual(["note: is required"]);
    expect(moderation({ note: EMOJI.repeat(ACTION_LIMITS.noteChars) }).note).toHaveLength(2000);
    expect(violations(() => moderation({ note: "x".repeat(1001) }))).toEqual(["note: must be at most 1000 characters"]);
    expect(fields(() => moderation({ note: "\u0000" }))).toEqual(["note"]);
  });

  it("names did and issuedAt as a lifecycle request does", () => {
    expect(fields(() => moderation({ did: "did:reg" }))).toEqual(["did"]);
    expect(fields(() => moderation({ issuedAt: "2026-11-21T10:05:00.001Z" }))).toEqual(["issuedAt"]);
    expect(fields(() => validateModerationRequest({}, { now: NOW }))).toEqual(["did", "action", "policy", "note", "issuedAt"]);
  });
});

describe("replay protection", () => {
  it("accepts an issuedAt only when strictly later than the last accepted one", () => {
    expect(isLaterIssuedAt("2026-11-21T10:00:00.000Z", undefined)).toBe(true);
    expect(isLaterIssuedAt("2026-11-21T10:00:00.001Z", "2026-11-21T10:00:00.000Z")).toBe(true);
    expect(isLaterIssuedAt("2026-11-21T10:00:00.000Z", "2026-11-21T10:00:00.000Z")).toBe(false);
    expect(isLaterIssuedAt("2026-11-21T09:59:59.999Z", "2026-11-21T10:00:00.000Z")).toBe(false);
  });

  it("refuses a replayed or stale issuedAt as failed_precondition naming issuedAt", () => {
    expect(() => assertLaterIssuedAt("2026-11-21T10:00:00.001Z", "2026-11-21T10:00:00.000Z")).not.toThrow();
    for (const stale of ["2026-11-21T10:00:00.000Z", "2026-11-21T09:00:00.000Z"]) {
      const call = () => assertLaterIssuedAt(stale, "2026-11-21T10:00:00.000Z");
      expect(call).toThrow(FailedPreconditionError);
      expect(call).toThrow(/^issuedAt: /);
    }
  });

  it("keeps one last issuedAt per payload type and subject", () => {
    const scopes = new Set([
      issuedAtScope(LIFECYCLE_PAYLOAD_TYPE, NAME),
      issuedAtScope(LIFECYCLE_PAYLOAD_TYPE, VERSIONED),
      issuedAtScope(MODERATION_PAYLOAD_TYPE, NAME),
      issuedAtScope(MODERATION_PAYLOAD_TYPE, VERSIONED),
    ]);
    expect(scopes.size).toBe(4);
    expect(issuedAtScope(LIFECYCLE_PAYLOAD_TYPE, NAME)).toBe(issuedAtScope(LIFECYCLE_PAYLOAD_TYPE, NAME));
  });
});
