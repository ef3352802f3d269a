import { describe, expect, it } from "vitest";
import { issuedAtScope } from "../../src/domain/action-rules.js";
import {
  controllerRole,
  emptyHistory,
  type FoldOptions,
  type FoldResult,
  foldEvent,
  foldHistory,
  type LifecycleEvent,
  type ModerationEvent,
  type NameEvent,
  type NameHistory,
  subjectOf,
} from "../../src/domain/history-fold.js";
import { statusOf } from "../../src/domain/version-state.js";

const NAME = "did:reg:main:skill:web-search";
const OWNER = "did:key:z6MkOwner";
const STRANGER = "did:key:z6MkStranger";
const MODERATOR = "did:key:z6MkModerator";
const OPTIONS: FoldOptions = { isModerator: (did) => did === MODERATOR };
const BASE = Date.parse("2026-11-21T10:00:00.000Z");

/** Event times and issuedAt values that grow with each event built, so only the tests that want a stale one get it. */
let tick = 0;
const nextTime = () => new Date(BASE + ++tick * 1000);

const created = (version: string, by = OWNER): NameEvent => ({ kind: "created", version, by, at: nextTime() });
const revoked = (version: string, by: string | undefined = OWNER): NameEvent => ({
  kind: "revoked",
  version,
  reason: "key leaked",
  by,
  at: nextTime(),
});

function lifecycle(action: LifecycleEvent["action"], fields: Partial<LifecycleEvent> = {}): LifecycleEvent {
  const at = nextTime();
  return { kind: "lifecycle", action, reason: `${action} it`, replacement: "", by: OWNER, issuedAt: at.toISOString(), at, ...fields };
}

function moderation(fields: Partial<ModerationEvent> & Pick<ModerationEvent, "action">): ModerationEvent {
  const at = nextTime();
  const policy = fields.action === "unquarantine" ? "" : "malware";
  return { kind: "moderation", policy, note: "reported", by: MODERATOR, issuedAt: at.toISOString(), at, ...fields } as ModerationEvent;
}

function fold(...events: NameEvent[]): FoldResult {
  return foldHistory(NAME, events, OPTIONS);
}

/** The history of events that must all be accepted. */
function accepted(...events: NameEvent[]): NameHistory {
  const result = fold(...events);
  expect(result.refusal).toBeUndefined();
  return result.history;
}

const statuses = (history: NameHistory) => Object.fromEntries([...history.versions].map(([version, state]) => [version, statusOf(state)]));

describe("folding a name's history", () => {
  it("builds every version's state, the archive, the latest version and the controllers", () => {
    const deprecate = lifecycle("deprecate", { version: "1.1.0", reason: "use 2.x", replacement: `${NAME}@2.0.0-rc.1` });
    const quarantine = moderation({ action: "quarantine", version: "1.0.0", policy: "spam", note: "looks like spam" });
    const archive = lifecycle("archive", { reason: "moved" });
    const history = accepted(created("1.0.0"), created("1.1.0"), created("2.0.0-rc.1"), deprecate, quarantine, archive);
    expect(statuses(history)).toEqual({ "1.0.0": "quarantined", "1.1.0": "deprecated", "2.0.0-rc.1": "active" });
    expect(history.versions.get("1.1.0")).toEqual({
      deprecation: { reason: "use 2.x", replacement: `${NAME}@2.0.0-rc.1`, at: deprecate.at, by: OWNER },
    });
    expect(history.versions.get("1.0.0")).toEqual({
      quarantine: { policy: "spam", note: "looks like spam", at: quarantine.at, by: MODERATOR },
    });
    expect(history.archive).toEqual({ reason: "moved", at: archive.at, by: OWNER });
    expect(history.latest).toBe("1.1.0"); // deprecated stays eligible, and stable beats the prerelease
    expect(history.controllers).toEqual([{ did: OWNER, role: "owner", since: expect.any(Date) }]);
    expect(controllerRole(history, OWNER)).toBe("owner");
    expect(controllerRole(history, STRANGER)).toBeUndefined();
    expect(history.position).toBe(6);
    // One clock per payload type on the name, whichever version a request addressed.
    expect(history.lastIssuedAt).toEqual(
      new Map([
        [issuedAtScope("registry.lifecycle.v1", NAME), archive.issuedAt],
        [issuedAtScope("registry.moderation.v1", NAME), quarantine.issuedAt],
      ]),
    );
    expect(Object.isFrozen(history) && Object.isFrozen(history.controllers)).toBe(true);
  });

  it("applies a bare-DID action to every version not removed", () => {
    const history = accepted(
      created("1.0.0"),
      created("2.0.0"),
      created("3.0.0"),
      moderation({ action: "remove", version: "1.0.0", policy: "legal" }),
      revoked("2.0.0"),
      lifecycle("yank"),
    );
    expect(history.versions.get("1.0.0")?.yank).toBeUndefined();
    expect(history.versions.get("2.0.0")?.yank).toBeDefined();
    expect(statuses(history)).toEqual({ "1.0.0": "removed", "2.0.0": "revoked", "3.0.0": "yanked" });
    expect(history.latest).toBe("3.0.0"); // yanked outranks revoked; removed is never latest
  });

  it("moves latest as states change, and has none once every version is removed", () => {
    const events = [created("1.0.0"), created("2.0.0"), lifecycle("yank", { version: "2.0.0" })];
    expect(accepted(...events).latest).toBe("1.0.0");
    events.push(moderation({ action: "quarantine", version: "1.0.0" }));
    expect(accepted(...events).latest).toBe("2.0.0");
    events.push(moderation({ action: "remove" }));
    expect(accepted(...events).latest).toBeUndefined();
  });

  it("lets a revoked version be deprecated and yanked, recorded without changing its status", () => {
    const history = accepted(
      created("1.0.0"),
      revoked("1.0.0"),
      lifecycle("deprecate", { version: "1.0.0" }),
      lifecycle("yank", { version: "1.0.0" }),
    );
    expect(history.versions.get("1.0.0")).toMatchObject({ deprecation: {}, yank: {}, revocation: { revocationReason: "key leaked" } });
    expect(statuses(history)).toEqual({ "1.0.0": "revoked" });
  });

  it("accepts a revocation by a moderator, and one from before the log whose signer was not kept", () => {
    expect(statuses(accepted(created("1.0.0"), created("2.0.0"), revoked("1.0.0", MODERATOR), revoked("2.0.0", undefined)))).toEqual({
      "1.0.0": "revoked",
      "2.0.0": "revoked",
    });
  });

  it("continues from an earlier history, counting positions from the name's first event", () => {
    const events = [created("1.0.0"), lifecycle("yank", { version: "1.0.0" }), created("1.0.1"), lifecycle("unyank", { version: "1.0.0" })];
    const whole = foldHistory(NAME, events, OPTIONS);
    const first = foldHistory(NAME, events.slice(0, 2), OPTIONS);
    const rest = foldHistory(NAME, events.slice(2), OPTIONS, first.history);
    expect(rest).toEqual(whole);
    expect(first.history.versions.get("1.0.0")?.yank).toBeDefined(); // the earlier history is not changed
    const replay = foldHistory(NAME, [events[1]!], OPTIONS, rest.history);
    expect(replay.refusal).toMatchObject({ rule: "stale-issued-at", position: 4 });
  });

  it("folds one event at a time, saying which versions it changed", () => {
    let history = emptyHistory(NAME);
    const changes: (readonly string[])[] = [];
    const events = [
      created("1.0.0"),
      created("2.0.0"),
      moderation({ action: "remove", version: "1.0.0" }),
      lifecycle("yank"),
      lifecycle("archive"),
      lifecycle("unyank", { version: "2.0.0" }),
    ];
    for (const event of events) {
      const step = foldEvent(history, event, OPTIONS);
      if ("refusal" in step) throw new Error(step.refusal.message);
      history = step.history;
      changes.push(step.changed);
    }
    // The bare yank passes over the removed version; the archive is written onto every version.
    expect(changes).toEqual([["1.0.0"], ["2.0.0"], ["1.0.0"], ["2.0.0"], ["1.0.0", "2.0.0"], ["2.0.0"]]);
    expect(history).toEqual(accepted(...events));
    expect(foldEvent(history, lifecycle("unyank"), OPTIONS)).toEqual({
      refusal: expect.objectContaining({ rule: "changes-nothing", position: events.length }),
    });
  });

  it("starts from nothing", () => {
    expect(emptyHistory(NAME)).toEqual({ name: NAME, controllers: [], versions: new Map(), lastIssuedAt: new Map(), position: 0 });
    expect(subjectOf(NAME, undefined)).toBe(NAME);
    expect(subjectOf(NAME, "1.0.0")).toBe(`${NAME}@1.0.0`);
  });
});

describe("refusals", () => {
  /** Folds `before` (all accepted), then `event`, which must be refused by `rule` at its position. */
  function refusedAt(before: NameEvent[], event: NameEvent, rule: string): void {
    const good = accepted(...before);
    const result = fold(...before, event, created("99.0.0"));
    expect(result.refusal).toEqual({
      rule,
      position: before.length,
      message: expect.stringMatching(new RegExp(`^event ${before.length}: `)),
    });
    // The state is the one before the refused event; nothing after it is applied.
    expect(result.history).toEqual(good);
  }

  it("an event before the name's first version: unknown-name", () => {
    refusedAt([], lifecycle("yank"), "unknown-name");
    refusedAt([], lifecycle("archive"), "unknown-name");
    refusedAt([], revoked("1.0.0"), "unknown-name");
    refusedAt([], moderation({ action: "quarantine", version: "1.0.0" }), "unknown-name");
  });

  it("an action on a version that does not exist: unknown-version", () => {
    refusedAt([created("1.0.0")], lifecycle("yank", { version: "1.0.1" }), "unknown-version");
    refusedAt([created("1.0.0")], moderation({ action: "quarantine", version: "2.0.0" }), "unknown-version");
    refusedAt([created("1.0.0")], revoked("1.0.0-rc.1"), "unknown-version");
  });

  it("any action on a removed version addressed by @version: version-removed", () => {
    const before = [created("1.0.0"), created("2.0.0"), moderation({ action: "remove", version: "1.0.0" })];
    refusedAt(before, lifecycle("deprecate", { version: "1.0.0" }), "version-removed");
    refusedAt(before, lifecycle("unyank", { version: "1.0.0" }), "version-removed");
    refusedAt(before, moderation({ action: "remove", version: "1.0.0" }), "version-removed");
    refusedAt(before, moderation({ action: "unquarantine", version: "1.0.0" }), "version-removed");
    refusedAt(before, revoked("1.0.0"), "version-removed");
  });

  it("a version created while the name is archived: name-archived, until unarchive", () => {
    const before = [created("1.0.0"), lifecycle("archive")];
    refusedAt(before, created("1.1.0"), "name-archived");
    expect(accepted(...before, lifecycle("unarchive"), created("1.1.0")).versions.has("1.1.0")).toBe(true);
  });

  it("a version published twice, also after revocation: version-exists", () => {
    refusedAt([created("1.0.0")], created("1.0.0"), "version-exists");
    refusedAt([created("1.0.0"), revoked("1.0.0")], created("1.0.0"), "version-exists");
  });

  it("a version the registry would not accept: invalid-version", () => {
    refusedAt([], created("1.0"), "invalid-version");
    refusedAt([created("1.0.0")], created("1.0.1+build"), "invalid-version");
  });

  it("archive or unarchive addressed to a version: name-action-on-version", () => {
    refusedAt([created("1.0.0")], lifecycle("archive", { version: "1.0.0" }), "name-action-on-version");
  });

  it("a create, lifecycle action or revocation by a signer that is not a controller: not-a-controller", () => {
    refusedAt([created("1.0.0")], created("1.0.1", STRANGER), "not-a-controller");
    refusedAt([created("1.0.0")], lifecycle("yank", { by: STRANGER }), "not-a-controller");
    refusedAt([created("1.0.0")], lifecycle("archive", { by: MODERATOR }), "not-a-controller");
    refusedAt([created("1.0.0")], revoked("1.0.0", STRANGER), "not-a-controller");
  });

  it("a moderation action whose signer is not a moderator, the owner included: not-a-moderator", () => {
    refusedAt([created("1.0.0")], moderation({ action: "quarantine", by: OWNER }), "not-a-moderator");
    const seen: [string, Date][] = [];
    const event = moderation({ action: "quarantine", by: STRANGER });
    foldHistory(NAME, [created("1.0.0"), event], {
      isModerator: (did, at) => {
        seen.push([did, at]);
        return false;
      },
    });
    expect(seen).toEqual([[STRANGER, event.at]]);
  });

  it("an issuedAt not strictly later than the last accepted for the same payload type on the name: stale-issued-at", () => {
    const yank = lifecycle("yank", { version: "1.0.0" });
    const before = [created("1.0.0"), created("2.0.0"), yank];
    refusedAt(before, { ...lifecycle("unyank", { version: "1.0.0" }), issuedAt: yank.issuedAt }, "stale-issued-at");
    refusedAt(before, { ...lifecycle("deprecate", { version: "1.0.0" }), issuedAt: "2026-11-21T09:00:00.000Z" }, "stale-issued-at");
    // The clock is the name's: a captured unyank of the bare DID, signed before the yank of 1.0.0,
    // must not undo it, and another version's request is no fresher for being about another version.
    refusedAt(before, lifecycle("unyank", { issuedAt: "2026-11-21T09:00:00.000Z" }), "stale-issued-at");
    refusedAt(before, lifecycle("yank", { version: "2.0.0", issuedAt: yank.issuedAt }), "stale-issued-at");
    // Another payload type keeps its own clock.
    accepted(...before, moderation({ action: "quarantine", version: "1.0.0", issuedAt: yank.issuedAt }));
    const quarantine = moderation({ action: "quarantine", version: "1.0.0" });
    refusedAt(
      [...before, quarantine],
      moderation({ action: "unquarantine", version: "1.0.0", issuedAt: quarantine.issuedAt }),
      "stale-issued-at",
    );
  });

  it("an event that changes nothing, which the registry does not log: changes-nothing", () => {
    refusedAt([created("1.0.0")], lifecycle("unyank", { version: "1.0.0" }), "changes-nothing");
    refusedAt([created("1.0.0")], lifecycle("undeprecate"), "changes-nothing");
    refusedAt([created("1.0.0")], lifecycle("unarchive"), "changes-nothing");
    refusedAt([created("1.0.0")], moderation({ action: "unquarantine" }), "changes-nothing");
    refusedAt([created("1.0.0"), revoked("1.0.0")], revoked("1.0.0"), "changes-nothing");
    // A bare DID addresses no version once all are removed.
    refusedAt([created("1.0.0"), moderation({ action: "remove" })], lifecycle("yank"), "changes-nothing");
  });

  it("a refused event does not advance the last issuedAt", () => {
    const stale = lifecycle("unyank", { version: "1.0.0" });
    const result = fold(created("1.0.0"), stale);
    expect(result.refusal?.rule).toBe("changes-nothing");
    expect(result.history.lastIssuedAt.size).toBe(0);
    expect(
      foldHistory(NAME, [lifecycle("yank", { version: "1.0.0", issuedAt: stale.issuedAt })], OPTIONS, result.history).refusal,
    ).toBeUndefined();
  });
});
