import type { ValidEntry } from "../domain/entry-rules.js";
import type { EntryStatus, EntryVersionSummary, StoredEntry } from "../entries/entry-repository.js";

/** A row of the `entries` table as the `pg` driver returns it. */
export interface EntryRow {
  sequence: string;
  base_did: string;
  entry_did: string;
  entry_type: string;
  name: string;
  version: string;
  version_key: string;
  is_prerelease: boolean;
  publisher_did: string;
  published_at: Date;
  description: string;
  tags: string[];
  data: Record<string, unknown>;
  content_hash: string;
  bond_amount: string;
  bond_value: string | null;
  bond_unit: string | null;
  signature: string;
  status: EntryStatus;
  revoked_at: Date | null;
  revocation_reason: string | null;
  is_latest: boolean;
}

/** The columns written when an entry is created (sequence and latest are set by the insert). */
export function rowFromValidEntry(entry: ValidEntry): Omit<EntryRow, "sequence" | "is_latest"> {
  const [bondValue, bondUnit] = entry.bondAmount === "" ? [null, null] : entry.bondAmount.split(" ");
  return {
    base_did: entry.baseDid,
    entry_did: entry.entryDid,
    entry_type: entry.entryType,
    name: entry.name,
    version: entry.version,
    version_key: entry.versionSortKey,
    is_prerelease: entry.isPrerelease,
    publisher_did: entry.publisherDid,
    published_at: entry.publishedAt,
    description: entry.description,
    tags: [...entry.tags],
    data: entry.data,
    content_hash: entry.contentHash,
    bond_amount: entry.bondAmount,
    bond_value: bondValue ?? null,
    bond_unit: bondUnit ?? null,
    signature: entry.signature,
    status: "active",
    revoked_at: null,
    revocation_reason: null,
  };
}

export function entryFromRow(row: EntryRow): StoredEntry {
  return {
    entryDid: row.entry_did,
    baseDid: row.base_did,
    entryType: row.entry_type,
    name: row.name,
    version: row.version,
    publisherDid: row.publisher_did,
    publishedAt: row.published_at,
    description: row.description,
    tags: row.tags,
    data: row.data,
    contentHash: row.content_hash,
    bondAmount: row.bond_amount,
    signature: row.signature,
    sequence: BigInt(row.sequence),
    status: row.status,
    revokedAt: row.revoked_at,
    revocationReason: row.revocation_reason,
    isLatest: row.is_latest,
  };
}

export const VERSION_SUMMARY_COLUMNS = ["version", "entry_did", "status", "published_at", "sequence"] as const;

export function versionSummaryFromRow(
  row: Pick<EntryRow, (typeof VERSION_SUMMARY_COLUMNS)[number]>,
): EntryVersionSummary {
  return {
    version: row.version,
    entryDid: row.entry_did,
    status: row.status,
    publishedAt: row.published_at,
    sequence: BigInt(row.sequence),
  };
}
