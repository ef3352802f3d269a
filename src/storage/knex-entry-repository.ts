import type { Knex } from "knex";
import type { ValidEntry } from "../domain/entry-rules.js";
import { parseVersion } from "../domain/semver-order.js";
import type {
  EntryOwner,
  EntryRepository,
  Revocation,
  StoredEntry,
} from "../entries/entry-repository.js";
import { AlreadyExistsError, PermissionDeniedError } from "../errors.js";
import { ENTRY_CHANGES_CHANNEL } from "./change-feed.js";
import { isUniqueViolation, translateDriverErrors } from "./driver-errors.js";
import { preparedQuery } from "./prepared-query.js";
import {
  entryFromRow,
  rowFromValidEntry,
  VERSION_SUMMARY_COLUMNS,
  versionSummaryFromRow,
  type EntryRow,
} from "./entry-row.js";

export function createKnexEntryRepository(knex: Knex): EntryRepository {
  return {
    createEntry: (entry) => translateDriverErrors(() => createEntry(knex, entry)),

    findVersion: (baseDid, version) =>
      translateDriverErrors(async () => {
        const row = await knex<EntryRow>("entries")
          .where({ base_did: baseDid, version_key: versionKey(version) })
          .first();
        return row === undefined ? undefined : entryFromRow(row);
      }),

    findLatest: (baseDid) =>
      translateDriverErrors(async () => {
        const row = await knex<EntryRow>("entries")
          .where({ base_did: baseDid, is_latest: true })
          .first();
        return row === undefined ? undefined : entryFromRow(row);
      }),

    listVersions: (baseDid) =>
      translateDriverErrors(async () => {
        const rows = await knex<EntryRow>("entries")
          .select(...VERSION_SUMMARY_COLUMNS)
          .where({ base_did: baseDid })
          .orderBy("version_key", "desc");
        return rows.map(versionSummaryFromRow);
      }),

    findOwner: (baseDid) =>
      translateDriverErrors(async () => {
        const row = await knex("entry_names")
          .select("publisher_did", "entry_type")
          .where({ base_did: baseDid })
          .first();
        return row === undefined
          ? undefined
          : ({ publisherDid: row.publisher_did, entryType: row.entry_type } satisfies EntryOwner);
      }),

    revoke: (baseDid, version, revocation) =>
      translateDriverErrors(() => revoke(knex, baseDid, version, revocation)),
  };
}

/** SQLSTATEs raised by registry_create_entry (migration 0003). */
const OWNED_BY_ANOTHER_PUBLISHER = "RG403";
const VERSION_ALREADY_PUBLISHED = "RG409";

/** Versions are looked up by their sort key: one index serves lookup, uniqueness and order. */
function versionKey(version: string): string {
  const parsed = parseVersion(version);
  if ("error" in parsed) throw new TypeError(`not a valid version: ${version}`);
  return parsed.sortKey;
}

const CREATE_ENTRY_SQL = `select * from registry_create_entry(${Array.from({ length: 17 }, (_, i) => `$${i + 1}`).join(", ")})`;

/** One round trip: the whole create transaction is registry_create_entry (migration 0003). */
async function createEntry(knex: Knex, entry: ValidEntry): Promise<StoredEntry> {
  const row = rowFromValidEntry(entry);
  try {
    const [assigned] = await preparedQuery<{ assigned_sequence: string; made_latest: boolean }>(
      knex,
      "registry_create_entry",
      CREATE_ENTRY_SQL,
      [
        row.base_did, row.entry_did, row.entry_type, row.name, row.version, row.version_key,
        row.is_prerelease, row.publisher_did, row.published_at, row.description, row.tags,
        JSON.stringify(row.data), row.content_hash, row.bond_amount, row.bond_value, row.bond_unit,
        row.signature,
      ],
    );
    if (assigned === undefined) throw new Error("registry_create_entry returned no row");
    return entryFromRow({ ...row, sequence: assigned.assigned_sequence, is_latest: assigned.made_latest });
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === OWNED_BY_ANOTHER_PUBLISHER) {
      throw new PermissionDeniedError(`${entry.baseDid} is owned by another publisher`);
    }
    // The unique constraint stays the final word for anything that bypasses the function's check.
    if (code === VERSION_ALREADY_PUBLISHED || isUniqueViolation(error)) throw alreadyPublished(entry);
    throw error;
  }
}

async function revoke(
  knex: Knex,
  baseDid: string,
  version: string | undefined,
  revocation: Revocation,
): Promise<StoredEntry[]> {
  return knex.transaction(async (tx) => {
    const name = await tx("entry_names").select("base_did").where({ base_did: baseDid }).forUpdate().first();
    if (name === undefined) return [];
    const addressed = (query: Knex.QueryBuilder) =>
      version === undefined
        ? query.where({ base_did: baseDid })
        : query.where({ base_did: baseDid, version_key: versionKey(version) });
    await addressed(tx("entries"))
      .where({ status: "active" })
      .update({ status: "revoked", revoked_at: revocation.revokedAt, revocation_reason: revocation.reason });
    await tx.raw("select registry_recompute_latest(?)", [baseDid]);
    await notifyChange(tx, baseDid);
    const rows: EntryRow[] = await addressed(tx("entries")).select("*").orderBy("version_key", "desc");
    return rows.map(entryFromRow);
  });
}

/** Tells every process's cache, on commit, that this entry changed (see change-feed.ts). */
async function notifyChange(tx: Knex.Transaction, baseDid: string): Promise<void> {
  await tx.raw("select pg_notify(?, ?)", [ENTRY_CHANGES_CHANNEL, baseDid]);
}

function alreadyPublished(entry: ValidEntry): AlreadyExistsError {
  return new AlreadyExistsError(
    `${entry.entryDid} was already published; a version can be published only once, even after revocation`,
  );
}
