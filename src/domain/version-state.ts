import type { ModerationAction, ModerationPolicy, NameAction, VersionLifecycleAction } from "./action-payloads.js";
import { parseVersion } from "./semver-order.js";

/**
 * A version's state after publishing (CONTRACT-HISTORY section 11): which marks apply to it, the
 * one status they add up to, how each action changes them, and which version is latest. Pure, so
 * the server, the storage mapper, the SDK's verifier and the mirror apply the same rules.
 */

/** Least severe first: a version's status is the last of these that applies. */
export const VERSION_STATUSES = ["active", "deprecated", "yanked", "quarantined", "revoked", "removed"] as const;
export type VersionStatus = (typeof VERSION_STATUSES)[number];

/** What discovery, the query language and search show unless a condition names `status`. */
export const DEFAULT_DISCOVERY_STATUSES = Object.freeze(["active", "deprecated"] as const);

export interface Deprecation {
  readonly reason: string;
  /** An entry DID, with or without version; `""` when none was named. */
  readonly replacement: string;
  readonly at: Date;
  readonly by: string;
}

export interface Yank {
  readonly reason: string;
  readonly at: Date;
  readonly by: string;
}

export interface Quarantine {
  readonly policy: ModerationPolicy;
  readonly note: string;
  readonly at: Date;
  readonly by: string;
}

export interface Removal {
  readonly policy: ModerationPolicy;
  readonly note: string;
  readonly at: Date;
  readonly by: string;
}

/** As CONTRACT.md section 5 has it; the entry carries these two members at its top level. */
export interface Revocation {
  readonly revokedAt: Date;
  readonly revocationReason: string;
}

/** Set on the name, shown on every version of it. */
export interface Archive {
  readonly reason: string;
  readonly at: Date;
  readonly by: string;
}

/** The marks on one version; a member is absent when its mark is not in place. */
export interface VersionState {
  readonly deprecation?: Deprecation;
  readonly yank?: Yank;
  readonly quarantine?: Quarantine;
  readonly revocation?: Revocation;
  readonly removal?: Removal;
}

/** A version as a reader sees it: its marks, its status and its name's archive. */
export interface VersionView extends VersionState {
  readonly status: VersionStatus;
  readonly archive?: Archive;
}

/** A version just published. */
export const ACTIVE_STATE: VersionState = Object.freeze({});

/** The most severe status that applies: removed > revoked > quarantined > yanked > deprecated > active. */
export function statusOf(state: VersionState): VersionStatus {
  if (state.removal !== undefined) return "removed";
  if (state.revocation !== undefined) return "revoked";
  if (state.quarantine !== undefined) return "quarantined";
  if (state.yank !== undefined) return "yanked";
  if (state.deprecation !== undefined) return "deprecated";
  return "active";
}

export function viewOf(state: VersionState, archive: Archive | undefined): VersionView {
  return Object.freeze({ ...state, status: statusOf(state), ...(archive === undefined ? {} : { archive }) });
}

export function isDiscoverableByDefault(status: VersionStatus): boolean {
  return (DEFAULT_DISCOVERY_STATUSES as readonly VersionStatus[]).includes(status);
}

/** A transition the rules refuse: the caller answers failed_precondition with `error`. */
export interface TransitionRefusal {
  readonly code: "failed_precondition";
  readonly error: string;
}

/** The state after one action, and whether the action changed anything (no change: no log record). */
export type Transition<S> = { readonly state: S; readonly changed: boolean } | TransitionRefusal;

/** Who acted and when: the DID whose key signed, and when the registry accepted the action. */
export interface Actor {
  readonly at: Date;
  readonly by: string;
}

export interface VersionLifecycleChange extends Actor {
  readonly action: VersionLifecycleAction;
  readonly reason: string;
  /** Read only with `deprecate`. */
  readonly replacement?: string;
}

export interface ArchiveChange extends Actor {
  readonly action: NameAction;
  readonly reason: string;
}

/** Quarantine and removal need a policy; only lifting a quarantine may leave it empty. */
export type ModerationChange = Actor & { readonly note: string } & (
    | { readonly action: Exclude<ModerationAction, "unquarantine">; readonly policy: ModerationPolicy }
    | { readonly action: "unquarantine"; readonly policy: ModerationPolicy | "" }
  );

const REMOVED: TransitionRefusal = Object.freeze({
  code: "failed_precondition",
  error: "the version was removed by a moderator: it can no longer be acted on",
});

/**
 * A publisher's action on one version. It never touches a quarantine or a removal: only
 * moderation lifts those. Setting a mark again restates it (new reason, time and signer).
 */
export function applyLifecycle(state: VersionState, change: VersionLifecycleChange): Transition<VersionState> {
  if (state.removal !== undefined) return REMOVED;
  const { at, by, reason } = change;
  switch (change.action) {
    case "deprecate":
      return changedTo({ ...state, deprecation: Object.freeze({ reason, replacement: change.replacement ?? "", at, by }) });
    case "undeprecate":
      return state.deprecation === undefined ? unchanged(state) : changedTo(without(state, "deprecation"));
    case "yank":
      return changedTo({ ...state, yank: Object.freeze({ reason, at, by }) });
    case "unyank":
      return state.yank === undefined ? unchanged(state) : changedTo(without(state, "yank"));
  }
}

/** `archive` or `unarchive` on the name. */
export function applyArchive(
  archive: Archive | undefined,
  change: ArchiveChange,
): { readonly state: Archive | undefined; readonly changed: boolean } {
  if (change.action === "unarchive") return { state: undefined, changed: archive !== undefined };
  return { state: Object.freeze({ reason: change.reason, at: change.at, by: change.by }), changed: true };
}

/** A moderator's action on one version; removal is final, so a removed version takes none. */
export function applyModeration(state: VersionState, change: ModerationChange): Transition<VersionState> {
  if (state.removal !== undefined) return REMOVED;
  const { at, by, note } = change;
  switch (change.action) {
    case "quarantine":
      return changedTo({ ...state, quarantine: Object.freeze({ policy: change.policy, note, at, by }) });
    case "unquarantine":
      return state.quarantine === undefined ? unchanged(state) : changedTo(without(state, "quarantine"));
    case "remove":
      // The other marks stay: they are part of the version's story, and the status says removed anyway.
      return changedTo({ ...state, removal: Object.freeze({ policy: change.policy, note, at, by }) });
  }
}

/** A revocation (CONTRACT.md section 5): terminal, and revoking again keeps the first one's time and reason. */
export function applyRevocation(state: VersionState, revocation: Revocation): Transition<VersionState> {
  if (state.removal !== undefined) return REMOVED;
  if (state.revocation !== undefined) return unchanged(state);
  return changedTo({ ...state, revocation: Object.freeze({ ...revocation }) });
}

function changedTo(state: VersionState): Transition<VersionState> {
  return { state: Object.freeze(state), changed: true };
}

function unchanged(state: VersionState): Transition<VersionState> {
  return { state, changed: false };
}

function without(state: VersionState, member: keyof VersionState): VersionState {
  const { [member]: _dropped, ...rest } = state;
  return rest;
}

/**
 * Where each status stands when latest is chosen, best group first; removed versions are never
 * latest. Within a group a stable version beats any prerelease, then SemVer precedence decides.
 */
export const LATEST_GROUPS: readonly (readonly VersionStatus[])[] = Object.freeze([
  Object.freeze(["active", "deprecated"] as const),
  Object.freeze(["yanked"] as const),
  Object.freeze(["quarantined"] as const),
  Object.freeze(["revoked"] as const),
]);

export interface NamedVersionState {
  /** A SemVer 2.0.0 version as the registry accepts it. */
  readonly version: string;
  readonly state: VersionState;
}

/** The version resolving the bare DID answers (section 11's rule), or undefined when none may be. */
export function latestVersion(versions: Iterable<NamedVersionState>): string | undefined {
  let best: { readonly group: number; readonly stable: boolean; readonly sortKey: string; readonly version: string } | undefined;
  for (const { version, state } of versions) {
    const group = LATEST_GROUPS.findIndex((statuses) => statuses.includes(statusOf(state)));
    if (group === -1) continue;
    const parsed = parseVersion(version);
    if ("error" in parsed) throw new TypeError(`version ${JSON.stringify(version)} ${parsed.error}`);
    const candidate = { group, stable: !parsed.isPrerelease, sortKey: parsed.sortKey, version };
    if (best === undefined || ranksAbove(candidate, best)) best = candidate;
  }
  return best?.version;
}

function ranksAbove(
  a: { readonly group: number; readonly stable: boolean; readonly sortKey: string },
  b: { readonly group: number; readonly stable: boolean; readonly sortKey: string },
): boolean {
  if (a.group !== b.group) return a.group < b.group;
  if (a.stable !== b.stable) return a.stable;
  return a.sortKey > b.sortKey;
}

/** The publisher fields a removal withholds (left empty) from every read but the log and the feed. */
export const REMOVAL_WITHHELD_FIELDS = Object.freeze(["description", "tags", "data", "homepage", "repository", "license"] as const);
export type WithheldField = (typeof REMOVAL_WITHHELD_FIELDS)[number];

/** What a withheld field reads as: the empty value of its kind. */
export const WITHHELD_VALUES: {
  readonly [F in WithheldField]: F extends "tags" ? readonly string[] : F extends "data" ? Readonly<Record<string, unknown>> : string;
} = Object.freeze({
  description: "",
  tags: Object.freeze([]),
  data: Object.freeze({}),
  homepage: "",
  repository: "",
  license: "",
});

/**
 * The entry as a reader may see it: for a removed version, each withheld field it carries is
 * emptied; any other entry is returned as it is.
 */
export function withholdRemoved<T extends object>(entry: T, state: VersionState): T {
  if (state.removal === undefined) return entry;
  const copy = { ...entry } as Record<string, unknown>;
  for (const field of REMOVAL_WITHHELD_FIELDS) if (field in copy) copy[field] = WITHHELD_VALUES[field];
  return copy as T;
}

/** A mark as stored and served (a jsonb column, an Entry member): its members as text, `at` as `toISOString()` writes it. */
export type StoredMark = Readonly<Record<string, string>>;

/** Marks and the revocation as a version's row holds them. */
export interface StoredMarks {
  readonly deprecation: StoredMark | null;
  readonly yank: StoredMark | null;
  readonly quarantine: StoredMark | null;
  readonly removal: StoredMark | null;
  readonly revokedAt: Date | null;
  readonly revocationReason: string | null;
}

const VERSION_MARK_MEMBERS = ["deprecation", "yank", "quarantine", "removal"] as const;

export function storedMark(mark: { readonly at: Date }): StoredMark {
  const value: Record<string, string> = {};
  for (const [member, text] of Object.entries(mark)) value[member] = text instanceof Date ? text.toISOString() : String(text);
  return Object.freeze(value);
}

/** A version's stored marks as the rules above see them. */
export function stateOfStored(stored: StoredMarks): VersionState {
  const state: Record<string, unknown> = {};
  for (const member of VERSION_MARK_MEMBERS) {
    const mark = stored[member];
    if (mark !== null) state[member] = { ...mark, at: new Date(mark.at ?? 0) };
  }
  if (stored.revokedAt !== null) state.revocation = { revokedAt: stored.revokedAt, revocationReason: stored.revocationReason ?? "" };
  return state as VersionState;
}
