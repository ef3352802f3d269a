import type { EntryStatus, PublishedFields, RegistryAssignedFields } from "../domain/entry-fields.js";
import type { ValidEntry } from "../domain/entry-rules.js";

export type { EntryStatus };

/**
 * An entry as the registry stores and returns it: the publisher's validated fields (and those
 * derived from them) plus what the registry assigned. Both halves come from the field catalogue
 * (src/domain/entry-fields.ts).
 */
export type StoredEntry = PublishedFields & RegistryAssignedFields;

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

/** A revocation as the registry applies it: the signed request (kept in the change log) and its time. */
export interface Revocation {
  readonly reason: string;
  readonly revokedAt: Date;
  /** The DID as the request addressed it, with or without "@version": what the signature covers. */
  readonly did: string;
  readonly signature: string;
  /** The did:key whose key signed it. */
  readonly signer: string;
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
