import type { EntryStatus, MarkValue, PublishedFields, RegistryAssignedFields } from "../domain/entry-fields.js";
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
  readonly deprecated: boolean;
  readonly yanked: boolean;
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

/** The log record kinds of signed actions. */
export type ActionKind = "entry.lifecycle" | "entry.moderation";

/** A lifecycle or moderation request exactly as signed: its payload's members and `signature`. */
export type SignedRequest = Readonly<Record<string, string>>;

/** A name as a signed action finds it, inside the action's transaction. */
export interface ActionTarget {
  readonly owner: EntryOwner;
  /** The name's archive mark; null when not archived. */
  readonly archive: MarkValue | null;
  /** The versions addressed: one, or every version of the name, highest precedence first. */
  readonly versions: readonly StoredEntry[];
  /** The issuedAt of the last accepted request of this payload type on the name. */
  readonly lastIssuedAt: Date | undefined;
}

/** What a signed action changes: the marks (and withheld fields) of some versions, and the name's archive. */
export interface ActionOutcome {
  readonly versions: readonly { readonly sequence: bigint; readonly columns: VersionColumnChanges }[];
  /** Set when the archive changed: the new mark, or null when lifted. */
  readonly archive?: MarkValue | null;
}

/** Columns an action may write on a version: its marks, and the fields a removal withholds. */
export type VersionColumnChanges = Readonly<
  Partial<Record<"deprecation" | "yank" | "quarantine" | "removal", MarkValue | null>> &
    Partial<Record<"description" | "homepage" | "repository" | "license", string>> & {
      readonly tags?: readonly string[];
      readonly data?: Readonly<Record<string, unknown>>;
    }
>;

/** A signed lifecycle or moderation request, as the log keeps it. */
export interface SignedAction {
  readonly kind: ActionKind;
  readonly payloadType: string;
  readonly issuedAt: Date;
  readonly request: SignedRequest;
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

  /**
   * Applies a signed action atomically: hands `decide` what it addresses (one version, or every
   * version when `version` is undefined; none when that version does not exist), records the
   * request's issuedAt, writes what `decide` returns, recomputes latest and, when anything
   * changed, appends one log record holding the request and each changed version. `decide` may
   * run more than once (when the name changes meanwhile) and must be pure. Returns the addressed
   * versions after the action, or undefined when the name does not exist; an error `decide`
   * throws leaves everything as it was.
   */
  applyAction(
    baseDid: string,
    version: string | undefined,
    action: SignedAction,
    decide: (target: ActionTarget) => ActionOutcome,
  ): Promise<StoredEntry[] | undefined>;
}
