import { describe, expect, it } from "vitest";
import {
  ACTIVE_STATE,
  applyArchive,
  applyLifecycle,
  applyModeration,
  applyRevocation,
  DEFAULT_DISCOVERY_STATUSES,
  isDiscoverableByDefault,
  latestVersion,
  REMOVAL_WITHHELD_FIELDS,
  statusOf,
  type Transition,
  VERSION_STATUSES,
  type VersionState,
  type VersionStatus,
  viewOf,
  WITHHELD_VALUES,
  withholdRemoved,
} from "../../src/domain/version-state.js";

const AT = new Date("2026-11-21T10:00:00.000Z");
const LATER = new Date("2026-11-22T10:00:00.000Z");
const OWNER = "did:key:z6MkOwner";
const MODERATOR = "did:key:z6MkModerator";

const DEPRECATED: VersionState = { deprecation: { reason: "old", replacement: "", at: AT, by: OWNER } };
const YANKED: VersionState = { yank: { reason: "broken", at: AT, by: OWNER } };
const QUARANTINED: VersionState = { quarantine: { policy: "malware", note: "reported", at: AT, by: MODERATOR } };
const REVOKED: VersionState = { revocation: { revokedAt: AT, revocationReason: "key leaked" } };
const REMOVED: VersionState = { removal: { policy: "phishing", note: "confirmed", at: AT, by: MODERATOR } };

/** The marks, least severe first, as VERSION_STATUSES orders their statuses. */
const MARKS: readonly [VersionStatus, VersionState][] = [
  ["deprecated", DEPRECATED],
  ["yanked", YANKED],
  ["quarantined", QUARANTINED],
  ["revoked", REVOKED],
  ["removed", REMOVED],
];

function applied(result: Transition<VersionState>): { state: VersionState; changed: boolean } {
  if ("error" in result) throw new Error(result.error);
  return result;
}

describe("a version's status", () => {
  it("is the most severe mark in place: removed > revoked > quarantined > yanked > deprecated > active", () => {
    const table: readonly [VersionState, VersionStatus][] = [
      [{}, "active"],
      [DEPRECATED, "deprecated"],
      [YANKED, "yanked"],
      [{ ...DEPRECATED, ...YANKED }, "yanked"],
      [QUARANTINED, "quarantined"],
      [{ ...YANKED, ...QUARANTINED }, "quarantined"],
      [REVOKED, "revoked"],
      [{ ...QUARANTINED, ...REVOKED }, "revoked"],
      [{ ...DEPRECATED, ...YANKED, ...REVOKED }, "revoked"],
      [REMOVED, "removed"],
      [{ ...REVOKED, ...REMOVED }, "removed"],
      [{ ...DEPRECATED, ...YANKED, ...QUARANTINED, ...REVOKED, ...REMOVED }, "removed"],
    ];
    for (const [state, status] of table) expect(statusOf(state), JSON.stringify(Object.keys(state))).toBe(status);
  });

  it("follows VERSION_STATUSES' order for every combination of marks", () => {
    expect(VERSION_STATUSES).toEqual(["active", "deprecated", "yanked", "quarantined", "revoked", "removed"]);
    for (let mask = 0; mask < 1 << MARKS.length; mask++) {
      const chosen = MARKS.filter((_, index) => (mask & (1 << index)) !== 0);
      const state = Object.assign({}, ...chosen.map(([, marks]) => marks)) as VersionState;
      expect(statusOf(state)).toBe(chosen.at(-1)?.[0] ?? "active");
    }
  });

  it("shows the name's archive on the version's view, with its marks and status", () => {
    const archive = { reason: "unmaintained", at: AT, by: OWNER };
    expect(viewOf(YANKED, archive)).toEqual({ ...YANKED, status: "yanked", archive });
    expect(viewOf(ACTIVE_STATE, undefined)).toEqual({ status: "active" });
    expect(Object.isFrozen(viewOf(YANKED, archive))).toBe(true);
  });
});

describe("lifecycle transitions", () => {
  it("deprecate sets the deprecation with its replacement, and restating it replaces it", () => {
    const first = applied(
      applyLifecycle(ACTIVE_STATE, { action: "deprecate", reason: "use 2.x", replacement: "did:reg:main:skill:b", at: AT, by: OWNER }),
    );
    expect(first).toEqual({
      state: { deprecation: { reason: "use 2.x", replacement: "did:reg:main:skill:b", at: AT, by: OWNER } },
      changed: true,
    });
    expect(Object.isFrozen(first.state)).toBe(true);
    const again = applied(applyLifecycle(first.state, { action: "deprecate", reason: "use 3.x", at: LATER, by: OWNER }));
    expect(again).toEqual({ state: { deprecation: { reason: "use 3.x", replacement: "", at: LATER, by: OWNER } }, changed: true });
  });

  it("undeprecate clears the deprecation, and changes nothing when there is none", () => {
    expect(applied(applyLifecycle(DEPRECATED, { action: "undeprecate", reason: "", at: LATER, by: OWNER }))).toEqual({
      state: {},
      changed: true,
    });
    const noop = applied(applyLifecycle(YANKED, { action: "undeprecate", reason: "", at: LATER, by: OWNER }));
    expect(noop).toEqual({ state: YANKED, changed: false });
    expect(noop.state).toBe(YANKED);
  });

  it("yank and unyank set and clear the yank, leaving the deprecation alone", () => {
    const yanked = applied(applyLifecycle(DEPRECATED, { action: "yank", reason: "broken", at: LATER, by: OWNER }));
    expect(yanked).toEqual({ state: { ...DEPRECATED, yank: { reason: "broken", at: LATER, by: OWNER } }, changed: true });
    expect(statusOf(yanked.state)).toBe("yanked");
    expect(applied(applyLifecycle(yanked.state, { action: "unyank", reason: "", at: LATER, by: OWNER }))).toEqual({
      state: DEPRECATED,
      changed: true,
    });
    expect(applied(applyLifecycle(DEPRECATED, { action: "unyank", reason: "", at: LATER, by: OWNER })).changed).toBe(false);
  });

  it("reads a replacement only with deprecate", () => {
    const yanked = applied(
      applyLifecycle(ACTIVE_STATE, { action: "yank", reason: "x", replacement: "did:reg:main:skill:b", at: AT, by: OWNER }),
    );
    expect(yanked.state).toEqual({ yank: { reason: "x", at: AT, by: OWNER } });
  });

  it("may deprecate or yank a revoked version, which stays revoked", () => {
    const deprecated = applied(applyLifecycle(REVOKED, { action: "deprecate", reason: "old", at: LATER, by: OWNER }));
    const yanked = applied(applyLifecycle(deprecated.state, { action: "yank", reason: "bad", at: LATER, by: OWNER }));
    expect(yanked.changed).toBe(true);
    expect(yanked.state).toMatchObject({ ...REVOKED, deprecation: { reason: "old" }, yank: { reason: "bad" } });
    expect(statusOf(yanked.state)).toBe("revoked");
  });

  it("never lifts a quarantine", () => {
    for (const action of ["undeprecate", "unyank", "deprecate", "yank"] as const) {
      const result = applied(applyLifecycle(QUARANTINED, { action, reason: "x", at: LATER, by: OWNER }));
      expect(result.state.quarantine).toBe(QUARANTINED.quarantine);
      expect(statusOf(result.state)).toBe("quarantined");
    }
  });

  it("refuses every action on a removed version as failed_precondition", () => {
    for (const action of ["deprecate", "undeprecate", "yank", "unyank"] as const) {
      expect(applyLifecycle(REMOVED, { action, reason: "x", at: LATER, by: OWNER })).toEqual({
        code: "failed_precondition",
        error: expect.stringMatching(/removed/),
      });
    }
  });
});

describe("moderation transitions", () => {
  it("quarantine sets the hold, restating replaces it, and unquarantine lifts it", () => {
    const held = applied(applyModeration(YANKED, { action: "quarantine", policy: "spam", note: "reported", at: AT, by: MODERATOR }));
    expect(held).toEqual({ state: { ...YANKED, quarantine: { policy: "spam", note: "reported", at: AT, by: MODERATOR } }, changed: true });
    const restated = applied(
      applyModeration(held.state, { action: "quarantine", policy: "malware", note: "worse", at: LATER, by: MODERATOR }),
    );
    expect(restated.state.quarantine).toEqual({ policy: "malware", note: "worse", at: LATER, by: MODERATOR });
    expect(
      applied(applyModeration(restated.state, { action: "unquarantine", policy: "", note: "cleared", at: LATER, by: MODERATOR })),
    ).toEqual({
      state: YANKED,
      changed: true,
    });
  });

  it("unquarantine of a version not quarantined changes nothing", () => {
    const result = applied(applyModeration(DEPRECATED, { action: "unquarantine", policy: "", note: "n", at: AT, by: MODERATOR }));
    expect(result).toEqual({ state: DEPRECATED, changed: false });
  });

  it("remove is final: it keeps the other marks and then refuses every action", () => {
    const start = { ...QUARANTINED, ...REVOKED };
    const removed = applied(applyModeration(start, { action: "remove", policy: "legal", note: "court order", at: LATER, by: MODERATOR }));
    expect(removed).toEqual({
      state: { ...start, removal: { policy: "legal", note: "court order", at: LATER, by: MODERATOR } },
      changed: true,
    });
    for (const action of ["quarantine", "remove"] as const) {
      expect(applyModeration(removed.state, { action, policy: "other", note: "n", at: LATER, by: MODERATOR })).toMatchObject({
        code: "failed_precondition",
      });
    }
    expect(applyModeration(removed.state, { action: "unquarantine", policy: "", note: "n", at: LATER, by: MODERATOR })).toMatchObject({
      code: "failed_precondition",
    });
  });

  it("may quarantine or remove a revoked version", () => {
    expect(
      statusOf(applied(applyModeration(REVOKED, { action: "quarantine", policy: "spam", note: "n", at: AT, by: MODERATOR })).state),
    ).toBe("revoked");
    expect(statusOf(applied(applyModeration(REVOKED, { action: "remove", policy: "spam", note: "n", at: AT, by: MODERATOR })).state)).toBe(
      "removed",
    );
  });
});

describe("revocation", () => {
  it("sets revokedAt and revocationReason once: revoking again keeps the first", () => {
    const first = applied(applyRevocation(YANKED, { revokedAt: AT, revocationReason: "leak" }));
    expect(first).toEqual({ state: { ...YANKED, revocation: { revokedAt: AT, revocationReason: "leak" } }, changed: true });
    const again = applied(applyRevocation(first.state, { revokedAt: LATER, revocationReason: "other" }));
    expect(again).toEqual({ state: first.state, changed: false });
  });

  it("is refused on a removed version", () => {
    expect(applyRevocation(REMOVED, { revokedAt: AT, revocationReason: "x" })).toMatchObject({ code: "failed_precondition" });
  });
});

describe("archive", () => {
  it("archive sets it (restating replaces it); unarchive clears it and changes nothing when there is none", () => {
    const archived = applyArchive(undefined, { action: "archive", reason: "unmaintained", at: AT, by: OWNER });
    expect(archived).toEqual({ state: { reason: "unmaintained", at: AT, by: OWNER }, changed: true });
    expect(applyArchive(archived.state, { action: "archive", reason: "moved", at: LATER, by: OWNER })).toEqual({
      state: { reason: "moved", at: LATER, by: OWNER },
      changed: true,
    });
    expect(applyArchive(archived.state, { action: "unarchive", reason: "", at: LATER, by: OWNER })).toEqual({
      state: undefined,
      changed: true,
    });
    expect(applyArchive(undefined, { action: "unarchive", reason: "", at: LATER, by: OWNER })).toEqual({
      state: undefined,
      changed: false,
    });
  });
});

describe("latest", () => {
  const of = (...versions: [string, VersionState][]) => latestVersion(versions.map(([version, state]) => ({ version, state })));

  it("is the highest SemVer precedence among active or deprecated versions", () => {
    expect(of(["1.2.0", {}], ["1.10.0", {}], ["1.9.0", {}])).toBe("1.10.0");
    expect(of(["1.2.0", {}], ["2.0.0", DEPRECATED])).toBe("2.0.0");
    expect(of(["3.0.0", YANKED], ["1.0.0", DEPRECATED], ["2.0.0", REVOKED])).toBe("1.0.0");
  });

  it("prefers any stable version to a higher prerelease, within a group", () => {
    expect(of(["1.0.0", {}], ["2.0.0-rc.1", {}])).toBe("1.0.0");
    expect(of(["0.0.1", DEPRECATED], ["9.0.0-beta", {}], ["9.0.0-rc", {}])).toBe("0.0.1");
    expect(of(["2.0.0-alpha", {}], ["2.0.0-rc.1", {}], ["2.0.0-rc.2", DEPRECATED], ["1.0.0", YANKED])).toBe("2.0.0-rc.2");
    expect(of(["2.0.0-rc.1", {}], ["2.0.0-rc.10", {}], ["2.0.0-rc.9", {}])).toBe("2.0.0-rc.10");
  });

  it("falls back to yanked, then quarantined, then revoked, never removed", () => {
    expect(of(["1.0.0-rc.1", {}], ["5.0.0", YANKED])).toBe("1.0.0-rc.1");
    expect(of(["1.0.0", YANKED], ["3.0.0", QUARANTINED], ["4.0.0", REVOKED], ["5.0.0", REMOVED])).toBe("1.0.0");
    expect(of(["1.0.0-a", YANKED], ["0.9.0", YANKED], ["3.0.0", QUARANTINED])).toBe("0.9.0");
    expect(of(["3.0.0", QUARANTINED], ["2.0.0", { ...YANKED, ...QUARANTINED }], ["4.0.0", REVOKED])).toBe("3.0.0");
    expect(of(["4.0.0", REVOKED], ["4.1.0", { ...YANKED, ...REVOKED }], ["5.0.0", REMOVED])).toBe("4.1.0");
    expect(of(["4.0.0-rc.1", REVOKED], ["3.0.0", REVOKED])).toBe("3.0.0");
  });

  it("is undefined when every version is removed, or there is none", () => {
    expect(of(["1.0.0", REMOVED], ["2.0.0", { ...REVOKED, ...REMOVED }])).toBeUndefined();
    expect(of()).toBeUndefined();
  });

  it("refuses a version the registry would not accept, rather than ranking it", () => {
    expect(() => of(["v1.0.0", {}])).toThrow(TypeError);
  });
});

describe("discovery and removal", () => {
  it("shows active and deprecated versions by default, no others", () => {
    expect(DEFAULT_DISCOVERY_STATUSES).toEqual(["active", "deprecated"]);
    expect(VERSION_STATUSES.filter(isDiscoverableByDefault)).toEqual(["active", "deprecated"]);
    expect(Object.isFrozen(DEFAULT_DISCOVERY_STATUSES)).toBe(true);
  });

  it("withholds exactly description, tags, data, homepage, repository and license of a removed version", () => {
    expect(REMOVAL_WITHHELD_FIELDS).toEqual(["description", "tags", "data", "homepage", "repository", "license"]);
    expect(Object.isFrozen(REMOVAL_WITHHELD_FIELDS)).toBe(true);
    expect(Object.isFrozen(WITHHELD_VALUES.tags) && Object.isFrozen(WITHHELD_VALUES.data)).toBe(true);
    const entry = {
      entryDid: "did:reg:main:skill:a@1.0.0",
      description: "steals keys",
      tags: ["x"],
      data: { url: "https://evil.example" },
      homepage: "https://evil.example",
      contentHash: `sha256:${"0".repeat(64)}`,
    };
    expect(withholdRemoved(entry, REMOVED)).toEqual({
      entryDid: "did:reg:main:skill:a@1.0.0",
      description: "",
      tags: [],
      data: {},
      homepage: "",
      contentHash: `sha256:${"0".repeat(64)}`,
    });
    expect(entry.description).toBe("steals keys");
    expect(withholdRemoved(entry, { ...QUARANTINED, ...REVOKED })).toBe(entry);
  });
});
