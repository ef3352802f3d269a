import type { ActionKind, SignedRequest, StoredEntry } from "../entries/entry-repository.js";

/** What a change did: created or revoked one version, or a signed lifecycle or moderation request. */
export type ChangeKind = "entry.created" | "entry.revoked" | ActionKind;
export type { ActionKind, SignedRequest };

/** The signed request behind a revocation, as the log keeps it so a mirror can re-verify it. */
export interface LoggedRevocation {
  /** The DID as addressed, with or without "@version": what the signature covers. */
  readonly did: string;
  readonly reason: string;
  /** Empty for revocations made before the log existed. */
  readonly signature: string;
  /** The did:key that signed it; empty when the signature is. */
  readonly signer: string;
}

interface LoggedChangeBase {
  /** Gapless from 0, in commit order. */
  readonly index: bigint;
  /** The version resolving the bare DID returned right after the change; "" when none. */
  readonly latestVersion: string;
  readonly loggedAt: Date;
}

/** A create or a revocation of one version: the entry right after it. */
export interface EntryChange extends LoggedChangeBase {
  readonly kind: "entry.created" | "entry.revoked";
  readonly entry: StoredEntry;
  /** Set on revocations. */
  readonly revocation?: LoggedRevocation;
}

/** One signed request, however many versions it changed: each of them right after it. */
export interface ActionChange extends LoggedChangeBase {
  readonly kind: ActionKind;
  readonly entries: readonly StoredEntry[];
  readonly request: SignedRequest;
}

/** One record of the change log. */
export type LoggedChange = EntryChange | ActionChange;

export interface ChangePage {
  readonly changes: readonly LoggedChange[];
  /** The log's size when the page was read. */
  readonly size: bigint;
  /** What the page's entry states weigh as text: about what holding and sending them costs. */
  readonly bytes: number;
}

/**
 * Reads of the change log in domain words. Records are appended by the entry repository's writes,
 * in the same transaction, so the log and the entries never disagree.
 */
export interface ChangeLogRepository {
  /**
   * Up to `limit` records with an index above `after` (from the first when undefined), oldest
   * first, stopping before the record that would take the page's weight past `maxBytes`; the
   * first record comes whatever it weighs.
   */
  listChanges(after: bigint | undefined, limit: number, maxBytes: number): Promise<ChangePage>;
  /** The number of records: the next record's index. */
  size(): Promise<bigint>;
}
