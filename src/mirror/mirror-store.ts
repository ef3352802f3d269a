import type { ChangeKind, LoggedRevocation } from "../changes/change-log.js";
import type { TreeHead } from "../changes/transparency-log.js";
import type { ValidEntry } from "../domain/entry-rules.js";
import type { EntryStatus } from "../domain/entry-fields.js";
import type { HashReader, StoredHash } from "../transparency/stored-hashes.js";

/** A record of the source's log, verified, in the shape this database keeps it. */
export interface MirroredChange {
  readonly index: number;
  readonly kind: ChangeKind;
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
  /**
   * Appends the changes at the end of the log, applies each to its entry and grows the tree, all
   * in one transaction or not at all. Refuses (MirrorRefusedError) when the log has moved or an
   * entry does not fit (a version already there, a name owned by another publisher).
   */
  append(batch: MirrorAppend): Promise<void>;
}
