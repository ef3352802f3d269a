import type { HashReader, StoredHash } from "../transparency/stored-hashes.js";
import type { LoggedChange } from "./change-log.js";

/** What the tree holds: its first `size` records, and their root. */
export interface TreeHead {
  readonly size: number;
  readonly root: Uint8Array;
}

/** A checkpoint as the log signed it: a C2SP signed note whose text is the tlog-checkpoint body. */
export interface SignedCheckpoint extends TreeHead {
  readonly note: string;
}

/** One integration's writes, made together or not at all. */
export interface IntegrationWrites {
  readonly storedHashes: readonly StoredHash[];
  /** The canonical bytes of each integrated record, by log index. */
  readonly records: readonly { readonly index: number; readonly bytes: Uint8Array }[];
  readonly head: TreeHead;
  readonly checkpoint: SignedCheckpoint;
}

/** An integrated record, as a history reads it. */
export interface IntegratedRecord {
  readonly index: number;
  readonly kind: string;
  /** The canonical bytes the tree hashed. */
  readonly bytes: Uint8Array;
}

/** The tree while one integrator holds it. */
export interface TreeIntegration extends HashReader {
  readonly head: TreeHead;
  /** Up to `limit` changes not yet in the tree, from index head.size on, in order. */
  pendingChanges(limit: number): Promise<readonly LoggedChange[]>;
  write(writes: IntegrationWrites): Promise<void>;
}

/**
 * Storage of the transparency log in domain words. The change log's records are appended by the
 * entry writes; the tree over them is grown by whichever process integrates.
 */
export interface TreeStore extends HashReader {
  /**
   * Runs `work` with the tree held exclusively, across processes, and commits what it wrote;
   * undefined when another integrator holds the tree at the moment.
   */
  integrate<T>(work: (integration: TreeIntegration) => Promise<T>): Promise<T | undefined>;
  latestCheckpoint(): Promise<SignedCheckpoint | undefined>;
  /** The canonical bytes of records [from, from + count), all of them integrated. */
  records(from: number, count: number): Promise<Uint8Array[]>;
  /** The checkpoint signed for exactly `size`, if one was and was kept. */
  checkpointAt(size: number): Promise<SignedCheckpoint | undefined>;
  /** Up to `limit` records of the name `baseDid` (a bare DID) with an index in (after, below), oldest first. */
  recordsOfName(baseDid: string, after: number, below: number, limit: number): Promise<IntegratedRecord[]>;
  /** The index of the last record about `entryDid` (a versioned DID) that the tree holds. */
  lastIntegratedRecordOf(entryDid: string, treeSize: number): Promise<number | undefined>;
}
