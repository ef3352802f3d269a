import { ENTRY_FIELDS, fieldSpec, type EntryField, type FieldKind, type MarkValue } from "../domain/entry-fields.js";
import type { ValidEntry } from "../domain/entry-rules.js";
import type { EntryStatus, EntryVersionSummary, StoredEntry } from "../entries/entry-repository.js";

/** A column's value as the `pg` driver returns it, by the field's kind (int8 arrives as text). */
interface ColumnValues {
  text: string;
  semver: string;
  time: Date;
  number: string;
  amount: string;
  tags: string[];
  boolean: boolean;
  status: EntryStatus;
  json: Record<string, unknown>;
  mark: MarkValue;
}

type CatalogueColumns = {
  [F in EntryField as F["column"]]: ColumnValues[F["kind"]] | (F extends { readonly nullable: true } ? null : never);
};

/**
 * Columns that exist for storage only, derived from the validated entry: how versions sort, and
 * an amount split so it compares within its unit.
 */
interface StorageColumns {
  version_key: string;
  is_prerelease: boolean;
  bond_value: string | null;
  bond_unit: string | null;
}

/** A row of the `entries` table as the `pg` driver returns it: the catalogue's columns and the storage-only ones. */
export type EntryRow = CatalogueColumns & StorageColumns;

/**
 * The record registry_create_entry takes (migration 0016), by column: every column the publisher's
 * entry fills. A test holds these keys to the table's columns.
 */
export type CreateEntryArguments = Omit<EntryRow, RegistryColumn>;
type RegistryColumn = Extract<EntryField, { setBy: "registry" }>["column"];

const FROM_COLUMN: { readonly [K in FieldKind]: (value: ColumnValues[K]) => unknown } = {
  text: (value) => value,
  semver: (value) => value,
  time: (value) => value,
  number: (value) => BigInt(value),
  amount: (value) => value,
  tags: (value) => value,
  boolean: (value) => value,
  status: (value) => value,
  json: (value) => value,
  mark: (value) => value,
};

/**
 * A stored entry from its row: one conversion per catalogue field. States logged before a field
 * existed lack its column; they read as what the migration that added it gave older rows.
 */
export function entryFromRow(row: EntryRow): StoredEntry {
  const entry: Record<string, unknown> = {};
  for (const field of ENTRY_FIELDS) {
    const value: unknown = row[field.column] ?? absentValue(field);
    entry[field.name] = value === null ? null : (FROM_COLUMN[field.kind] as (value: unknown) => unknown)(value);
  }
  return entry as StoredEntry;
}

/** What a state logged before the field existed holds for it: its catalogue default, false, or nothing. */
function absentValue(field: EntryField): unknown {
  if (fieldSpec(field).nullable === true) return null;
  if (field.kind === "text") return fieldSpec(field).absentAs ?? "";
  return field.kind === "boolean" ? false : null;
}

/** The create function's arguments for a validated entry: its catalogue fields by column, and the storage-only columns. */
export function createArgumentsOf(entry: ValidEntry): CreateEntryArguments {
  const columns: Record<string, unknown> = {};
  for (const field of ENTRY_FIELDS) {
    if (field.setBy !== "registry") columns[field.column] = entry[field.name as keyof ValidEntry];
  }
  const [bondValue, bondUnit] = entry.bondAmount === "" ? [null, null] : entry.bondAmount.split(" ");
  const storage: StorageColumns = {
    version_key: entry.versionSortKey,
    is_prerelease: entry.isPrerelease,
    bond_value: bondValue ?? null,
    bond_unit: bondUnit ?? null,
  };
  return { ...columns, ...storage } as CreateEntryArguments;
}

/** The row a create wrote, completed with what the function assigned and the defaults of a new entry. */
export function createdRow(created: CreateEntryArguments, assigned: { sequence: string; isLatest: boolean }): EntryRow {
  return {
    ...created,
    sequence: assigned.sequence,
    status: "active",
    revoked_at: null,
    revocation_reason: null,
    is_latest: assigned.isLatest,
    deprecation: null,
    yank: null,
    quarantine: null,
    removal: null,
    archive: null,
    deprecated: false,
    archived: false,
  };
}

export const VERSION_SUMMARY_COLUMNS = ["version", "entry_did", "status", "published_at", "sequence", "deprecated", "yank"] as const;

export function versionSummaryFromRow(row: Pick<EntryRow, (typeof VERSION_SUMMARY_COLUMNS)[number]>): EntryVersionSummary {
  return {
    version: row.version,
    entryDid: row.entry_did,
    status: row.status,
    publishedAt: row.published_at,
    sequence: BigInt(row.sequence),
    deprecated: row.deprecated,
    yanked: row.yank !== null,
  };
}
