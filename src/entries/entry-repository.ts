import type { ValidEntry } from "../domain/entry-rules.js";

export type EntryStatus = "active" | "revoked";

/** An entry as the registry stores and returns it. */
export interface StoredEntry {
  readonly entryDid: string;
  readonly baseDid: string;
  readonly entryType: string;
  readonly name: string;
  readonly version: string;
  readonly publisherDid: string;
  readonly publishedAt: Date;
  readonly description: string;
  readonly tags: readonly string[];
  readonly data: Record<string, unknown>;
  readonly contentHash: string;
  readonly bondAmount: string;
  readonly signature: string;
  readonly sequence: bigint;
  readonly status: EntryStatus;
  readonly revokedAt: Date | null;
  readonly revocationReason: string | null;
  readonly isLatest: boolean;
}

/** One line of a version listing. */
export interface EntryVersionSummary {
  readonly version: string;
  readonly entryDid: string;
  readonly status: EntryStatus;
  readonly publishedAt: Date;
  readonly sequence: bigint;
}

/** Who owns an entry DID: its first publisher, and the type all its versions share. */
export interface EntryOwner {
  readonly publisherDid: string;
  readonly entryType: string;
}

export interface Revocation {
  readonly reason: string;
  readonly revokedAt: Date;
}

/**
 * Storage of entries in domain words. Each method is atomic; the rules that depend on stored state
 * (a version is published once, ownership, which version is latest, the global sequence) are kept
 * by the implementation inside one transaction per call.
 */
export interface EntryRepository {
  /**
   * Stores a new version and makes it latest when it outranks the current latest.
   * Throws PermissionDeniedError when another publisher owns the entry DID, and
   * AlreadyExistsError when the version was ever published.
   */
  createEntry(entry: ValidEntry): Promise<StoredEntry>;

  /** The version of `baseDid`, revoked or not. */
  findVersion(baseDid: string, version: string): Promise<StoredEntry | undefined>;

  /** The version that resolving `baseDid` without a version returns. */
  findLatest(baseDid: string): Promise<StoredEntry | undefined>;

  /** Every version of `baseDid`, highest SemVer precedence first. */
  listVersions(baseDid: string): Promise<EntryVersionSummary[]>;

  findOwner(baseDid: string): Promise<EntryOwner | undefined>;

  /**
   * Revokes one version, or every active version when `version` is undefined, and recomputes
   * latest. Versions already revoked keep their first revocation. Returns every addressed entry
   * in its revoked state; an empty list when nothing was addressed.
   */
  revoke(baseDid: string, version: string | undefined, revocation: Revocation): Promise<StoredEntry[]>;
}
