import {
  LIFECYCLE_PAYLOAD_TYPE,
  type LifecycleAction,
  MODERATION_PAYLOAD_TYPE,
  type ModerationAction,
  type ModerationPolicy,
  NAME_ACTIONS,
  type NameAction,
} from "./action-payloads.js";
import { isLaterIssuedAt, issuedAtScope } from "./action-rules.js";
import { parseVersion } from "./semver-order.js";
import {
  ACTIVE_STATE,
  type Archive,
  applyArchive,
  applyLifecycle,
  applyModeration,
  applyRevocation,
  latestVersion,
  type Transition,
  type VersionLifecycleChange,
  type VersionState,
} from "./version-state.js";

/**
 * The state of one name folded from its history, oldest first (CONTRACT-HISTORY sections 11-13
 * and 17): the server's writes, `registry verify` and the mirror reach the same state from the
 * same events, and refuse the same event. Events are abstract and already verified (signatures,
 * field rules): whoever reads log records maps them onto these types.
 *
 * Room for sections 14-16: an event kind is one more member of `NameEvent` and one more case in
 * `step`; controllers are a list with roles (invitations and key rotations will change it), and
 * every event carries the time it was logged, which pending key operations will be settled against.
 */

export type ControllerRole = "owner" | "maintainer";

export interface Controller {
  readonly did: string;
  readonly role: ControllerRole;
  readonly since: Date;
}

interface EventBase {
  /** When the registry accepted the event (its log record's time); the `at` of the marks it sets. */
  readonly at: Date;
}

/** A version published; `by` is its publisherDid. */
export interface VersionCreatedEvent extends EventBase {
  readonly kind: "created";
  readonly version: string;
  readonly by: string;
}

/** One version revoked (the log holds one record per version a revocation changed). */
export interface VersionRevokedEvent extends EventBase {
  readonly kind: "revoked";
  readonly version: string;
  readonly reason: string;
  /** Undefined for revocations from before the log, whose signer was not kept. */
  readonly by?: string;
}

/** A lifecycle request; `version` undefined when it addressed the bare DID. */
export interface LifecycleEvent extends EventBase {
  readonly kind: "lifecycle";
  readonly version?: string;
  readonly action: LifecycleAction;
  readonly reason: string;
  readonly replacement: string;
  readonly by: string;
  readonly issuedAt: string;
}

/** A moderation request; `version` undefined when it addressed the bare DID. */
export type ModerationEvent = EventBase & {
  readonly kind: "moderation";
  readonly version?: string;
  readonly note: string;
  readonly by: string;
  readonly issuedAt: string;
} & (
    | { readonly action: Exclude<ModerationAction, "unquarantine">; readonly policy: ModerationPolicy }
    | { readonly action: "unquarantine"; readonly policy: ModerationPolicy | "" }
  );

export type NameEvent = VersionCreatedEvent | VersionRevokedEvent | LifecycleEvent | ModerationEvent;

/** The rules an event can break, each named so a mirror or a verifier can say which. */
export const FOLD_RULES = [
  "unknown-name",
  "unknown-version",
  "invalid-version",
  "version-exists",
  "name-archived",
  "version-removed",
  "name-action-on-version",
  "not-a-controller",
  "not-a-moderator",
  "stale-issued-at",
  "changes-nothing",
] as const;
export type FoldRule = (typeof FOLD_RULES)[number];

export interface FoldRefusal {
  readonly rule: FoldRule;
  /** The event's place in the name's history, counted from 0. */
  readonly position: number;
  readonly message: string;
}

export interface NameHistory {
  /** The bare entry DID. */
  readonly name: string;
  /** Today the first publisher, as owner (section 14 adds invitations, maintainers, transfers). */
  readonly controllers: readonly Controller[];
  /** Every version in the order it was created. */
  readonly versions: ReadonlyMap<string, VersionState>;
  readonly archive?: Archive;
  /** What resolving the bare DID answers; undefined while no version may be latest. */
  readonly latest?: string;
  /**
   * The last accepted `issuedAt` per payload type on the name (`issuedAtScope` of the bare DID): one
   * clock for a name and all its versions, as the registry keeps it (docs/lifecycle.md, "Replay").
   */
  readonly lastIssuedAt: ReadonlyMap<string, string>;
  /** How many events were folded: the position of the next one. */
  readonly position: number;
}

export interface FoldOptions {
  /** Whether `did` held moderation authority (a `registry.admin` signer) when the registry accepted an event at `at`. */
  readonly isModerator: (did: string, at: Date) => boolean;
}

/** One event folded: the history after it, and the versions it changed (every version, for an archive). */
export type FoldStep = { readonly history: NameHistory; readonly changed: readonly string[] } | { readonly refusal: FoldRefusal };

export interface FoldResult {
  /** The state after the last event accepted: before the refused one, when there is one. */
  readonly history: NameHistory;
  readonly refusal?: FoldRefusal;
}

/** A name before its first event. */
export function emptyHistory(name: string): NameHistory {
  return freezeHistory({ name, controllers: [], versions: new Map(), lastIssuedAt: new Map(), position: 0 });
}

/**
 * Folds `events` onto `from` (an empty history when not given), stopping at the first event that
 * breaks a rule, so that a batch with a bad record can be refused whole.
 */
export function foldHistory(name: string, events: Iterable<NameEvent>, options: FoldOptions, from?: NameHistory): FoldResult {
  const draft = draftOf(from ?? emptyHistory(name));
  for (const event of events) {
    const refusal = step(draft, event, options);
    if (refusal !== undefined) return { history: freezeHistory(draft), refusal };
    draft.position++;
  }
  return { history: freezeHistory(draft) };
}

/** Folds one event onto `history`: what a reader of records checks each record's stated outcome against. */
export function foldEvent(history: NameHistory, event: NameEvent, options: FoldOptions): FoldStep {
  const draft = draftOf(history);
  const refusal = step(draft, event, options);
  if (refusal !== undefined) return { refusal };
  draft.position++;
  return { history: freezeHistory(draft), changed: Object.freeze([...draft.changed]) };
}

/** The role `did` holds on the name, if any: the one place signer authority is read from. */
export function controllerRole(history: Pick<NameHistory, "controllers">, did: string): ControllerRole | undefined {
  return history.controllers.find((controller) => controller.did === did)?.role;
}

/** The subject a request about `version` of the name (or the name itself) signs. */
export function subjectOf(name: string, version: string | undefined): string {
  return version === undefined ? name : `${name}@${version}`;
}

interface Draft {
  name: string;
  controllers: Controller[];
  versions: Map<string, VersionState>;
  archive: Archive | undefined;
  lastIssuedAt: Map<string, string>;
  position: number;
  /** The versions the event being folded changed. */
  changed: string[];
}

function draftOf(history: NameHistory): Draft {
  return {
    name: history.name,
    controllers: [...history.controllers],
    versions: new Map(history.versions),
    archive: history.archive,
    lastIssuedAt: new Map(history.lastIssuedAt),
    position: history.position,
    changed: [],
  };
}

function freezeHistory(draft: Omit<Draft, "archive" | "changed"> & { archive?: Archive | undefined }): NameHistory {
  const versions = new Map(draft.versions);
  const latest = latestVersion([...versions].map(([version, state]) => ({ version, state })));
  return Object.freeze({
    name: draft.name,
    controllers: Object.freeze(draft.controllers.map((controller) => Object.freeze({ ...controller }))),
    versions,
    ...(draft.archive === undefined ? {} : { archive: draft.archive }),
    ...(latest === undefined ? {} : { latest }),
    lastIssuedAt: new Map(draft.lastIssuedAt),
    position: draft.position,
  });
}

/** Applies one event to the draft, or leaves it untouched and says which rule the event breaks. */
function step(draft: Draft, event: NameEvent, options: FoldOptions): FoldRefusal | undefined {
  draft.changed = [];
  // A name exists from its first version on; nothing else can come first.
  if (draft.versions.size === 0 && event.kind !== "created") return refuse(draft, "unknown-name", `${draft.name} has no version`);
  switch (event.kind) {
    case "created":
      return created(draft, event);
    case "revoked":
      return revoked(draft, event, options);
    case "lifecycle":
      return lifecycle(draft, event);
    case "moderation":
      return moderation(draft, event, options);
  }
}

function created(draft: Draft, event: VersionCreatedEvent): FoldRefusal | undefined {
  const parsed = parseVersion(event.version);
  if ("error" in parsed) return refuse(draft, "invalid-version", `version ${JSON.stringify(event.version)} ${parsed.error}`);
  if (draft.versions.has(event.version)) {
    return refuse(draft, "version-exists", `${subjectOf(draft.name, event.version)} was already published: a slot is used once, ever`);
  }
  if (draft.archive !== undefined) return refuse(draft, "name-archived", `${draft.name} is archived: no version may be created`);
  // The first create makes its publisher the owner; later ones need a controller.
  if (draft.controllers.length === 0) draft.controllers.push({ did: event.by, role: "owner", since: event.at });
  else if (controllerRole(draft, event.by) === undefined) {
    return refuse(draft, "not-a-controller", `${event.by} is not a controller of ${draft.name}`);
  }
  draft.versions.set(event.version, ACTIVE_STATE);
  draft.changed = [event.version];
  return undefined;
}

function revoked(draft: Draft, event: VersionRevokedEvent, options: FoldOptions): FoldRefusal | undefined {
  const { by } = event;
  if (by !== undefined && controllerRole(draft, by) === undefined && !options.isModerator(by, event.at)) {
    return refuse(draft, "not-a-controller", `${by} is neither a controller of ${draft.name} nor a moderator`);
  }
  const revocation = { revokedAt: event.at, revocationReason: event.reason };
  return applyToVersions(draft, event.version, (state) => applyRevocation(state, revocation));
}

function lifecycle(draft: Draft, event: LifecycleEvent): FoldRefusal | undefined {
  if (controllerRole(draft, event.by) === undefined) {
    return refuse(draft, "not-a-controller", `${event.by} is not a controller of ${draft.name}`);
  }
  const scope = issuedAtScope(LIFECYCLE_PAYLOAD_TYPE, draft.name);
  const stale = staleIssuedAt(draft, scope, event.issuedAt);
  if (stale !== undefined) return stale;
  const { action } = event;
  if (isNameAction(action)) {
    if (event.version !== undefined) {
      return refuse(draft, "name-action-on-version", `${action} acts on the name, not on ${subjectOf(draft.name, event.version)}`);
    }
    const archive = applyArchive(draft.archive, { action, reason: event.reason, at: event.at, by: event.by });
    if (!archive.changed) return refuse(draft, "changes-nothing", `${draft.name} is not archived: ${action} changes nothing`);
    draft.archive = archive.state;
    // The registry writes the name's archive onto every version, removed ones too.
    draft.changed = [...draft.versions.keys()];
  } else {
    const change: VersionLifecycleChange = { action, reason: event.reason, replacement: event.replacement, at: event.at, by: event.by };
    const refusal = applyToVersions(draft, event.version, (state) => applyLifecycle(state, change));
    if (refusal !== undefined) return refusal;
  }
  draft.lastIssuedAt.set(scope, event.issuedAt);
  return undefined;
}

function moderation(draft: Draft, event: ModerationEvent, options: FoldOptions): FoldRefusal | undefined {
  if (!options.isModerator(event.by, event.at)) return refuse(draft, "not-a-moderator", `${event.by} is not a moderator`);
  const scope = issuedAtScope(MODERATION_PAYLOAD_TYPE, draft.name);
  const stale = staleIssuedAt(draft, scope, event.issuedAt);
  if (stale !== undefined) return stale;
  const refusal = applyToVersions(draft, event.version, (state) => applyModeration(state, event));
  if (refusal !== undefined) return refusal;
  draft.lastIssuedAt.set(scope, event.issuedAt);
  return undefined;
}

function staleIssuedAt(draft: Draft, scope: string, issuedAt: string): FoldRefusal | undefined {
  const last = draft.lastIssuedAt.get(scope);
  if (isLaterIssuedAt(issuedAt, last)) return undefined;
  return refuse(draft, "stale-issued-at", `issuedAt ${issuedAt} is not later than ${last}, the last accepted for ${scope}`);
}

/**
 * Applies a transition to the version addressed, or to every version not removed when the bare
 * DID was addressed. All or nothing: the draft changes only when every transition is allowed, and
 * an event that changes no version is refused, since the registry logs no record for it.
 */
function applyToVersions(
  draft: Draft,
  version: string | undefined,
  transition: (state: VersionState) => Transition<VersionState>,
): FoldRefusal | undefined {
  const addressed = version === undefined ? [...draft.versions].filter(([, state]) => state.removal === undefined) : [];
  if (version !== undefined) {
    const state = draft.versions.get(version);
    if (state === undefined) return refuse(draft, "unknown-version", `${subjectOf(draft.name, version)} does not exist`);
    addressed.push([version, state]);
  }
  const changes: [string, VersionState][] = [];
  for (const [name, state] of addressed) {
    const result = transition(state);
    if ("error" in result) return refuse(draft, "version-removed", `${subjectOf(draft.name, name)}: ${result.error}`);
    if (result.changed) changes.push([name, result.state]);
  }
  if (changes.length === 0) return refuse(draft, "changes-nothing", `${subjectOf(draft.name, version)}: the event changes nothing`);
  for (const [name, state] of changes) draft.versions.set(name, state);
  draft.changed = changes.map(([name]) => name);
  return undefined;
}

function refuse(draft: Draft, rule: FoldRule, message: string): FoldRefusal {
  return Object.freeze({ rule, position: draft.position, message: `event ${draft.position}: ${message}` });
}

function isNameAction(action: LifecycleAction): action is NameAction {
  return (NAME_ACTIONS as readonly string[]).includes(action);
}
