import type { ActionKind, ChangeKind, LoggedRevocation } from "../changes/change-log.js";
import type { TreeHead } from "../changes/transparency-log.js";
import type { ValidEntry } from "../domain/entry-rules.js";
import type { EntryStatus, MarkValue } from "../domain/entry-fields.js";
import type { HashReader, StoredHash } from "../transparency/stored-hashes.js";

/** A record of the source's log, verified and folded, in the shape this database keeps it. */
export type MirroredChange = MirroredEntryChange | MirroredAction;

/** A create or a revocation: one entry, as its record holds it. */
export interface MirroredEntryChange {
  readonly index: number;
  readonly kind: Exclude<ChangeKind, ActionKind>;
  /** The record's bytes as the source's tree hashed them, kept unchanged. */
  readonly bytes: Uint8Array;
  /** What the publisher signed, checked against the registry's rules. */
  readonly entry: ValidEntry;
  /** What the source's registry assigned, as it stood right after the change. */
  readonly state: {
    readonly sequence: bigint;
    readonly status: EntryStatus;
    readonly revokedAt: Date | null;
    readonly revocationReason: string | null;
  };
  /** The version the bare DID resolves to right after the change; the source's latest rule, not this one's. */
  readonly latestVersion: string;
  readonly revocation?: LoggedRevocation;
  readonly loggedAt: Date;
}

/** A lifecycle or moderation request: the marks the fold gave each version it changed. */
export interface MirroredAction {
  readonly index: number;
  readonly kind: ActionKind;
  readonly bytes: Uint8Array;
  /** The bare DID of the name acted on. */
  readonly baseDid: string;
  /** The request as signed, with its signature. */
  readonly request: Readonly<Record<string, string>>;
  /** Each version changed, by DID, with its marks after the request; a removal also withholds its fields. */
  readonly versions: readonly { readonly entryDid: string; readonly marks: Readonly<Record<VersionMark, MarkValue | null>> }[];
  /** Set by `archive` and `unarchive`: the name's mark after it, null when lifted. */
  readonly archive?: MarkValue | null;
  readonly latestVersion: string;
  readonly loggedAt: Date;
}

export type VersionMark = "deprecation" | "yank" | "quarantine" | "removal";

/** Where this database stands: its log, its tree over the log, and the last checkpoint it keeps. */
export interface MirrorPosition {
  readonly logSize: number;
  readonly tree: TreeHead;
  /** The signed note of the largest checkpoint kept; undefined when none. */
  readonly checkpointNote: string | undefined;
  /**
   * The verifier key of the log this database copies, recorded with its first batch; undefined
   * when it copies none. A copy stopped before its first checkpoint has records and this, only.
   */
  readonly sourceKey: string | undefined;
}

/** The tree while an append holds it. */
export interface MirrorTree extends HashReader {
  readonly head: TreeHead;
}

export interface MirrorAppend {
  readonly changes: readonly MirroredChange[];
  /**
   * Runs inside the append's transaction, with the tree and the log held: returns the hashes the
   * changes add and the tree's new head, or throws (and nothing is written) when they do not prove.
   */
  extend(tree: MirrorTree): Promise<{ readonly storedHashes: readonly StoredHash[]; readonly head: TreeHead }>;
  /** The source's signed checkpoint of the new head, when the append reaches one. */
  readonly checkpointNote?: string;
}

/** A registry database receiving another registry's log, in domain words. */
export interface MirrorStore {
  position(): Promise<MirrorPosition>;
  /** The records this database holds about each name, oldest first, as the bytes the log hashed. */
  recordsAbout(baseDids: readonly string[]): Promise<ReadonlyMap<string, readonly Uint8Array[]>>;
  /**
   * Appends the changes at the end of the log, applies each to its entry and grows the tree, all
   * in one transaction or not at all. Refuses (MirrorRefusedError) when the log has moved or an
   * entry does not fit (a version already there, a name owned by another publisher).
   */
  append(batch: MirrorAppend): Promise<void>;
}
