import type { Knex } from "knex";
import type { ValidEntry } from "../domain/entry-rules.js";
import type {
  EntryOwner,
  EntryRepository,
  Revocation,
  StoredEntry,
} from "../entries/entry-repository.js";
import { AlreadyExistsError, PermissionDeniedError } from "../errors.js";
import { ENTRY_CHANGES_CHANNEL } from "./change-feed.js";
import { isUniqueViolation, translateDriverErrors } from "./driver-errors.js";
import {
  entryFromRow,
  rowFromValidEntry,
  VERSION_SUMMARY_COLUMNS,
  versionSummaryFromRow,
  type EntryRow,
} from "./entry-row.js";

/** The order in which a version qualifies as latest: active, then stable, then precedence. */
const LATEST_ORDER = "(status = 'active') desc, is_prerelease asc, version_key desc";

export function createKnexEntryRepository(knex: Knex): EntryRepository {
  return {
    createEntry: (entry) => translateDriverErrors(() => createEntry(knex, entry)),

    findVersion: (baseDid, version) =>
      translateDriverErrors(async () => {
        const row = await knex<EntryRow>("entries").where({ base_did: baseDid, version }).first();
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

async function createEntry(knex: Knex, entry: ValidEntry): Promise<StoredEntry> {
  try {
    return await knex.transaction(async (tx) => {
      const owner = await lockName(tx, entry);
      if (owner !== entry.publisherDid) {
        throw new PermissionDeniedError(`${entry.baseDid} is owned by another publisher`);
      }
      const existing = await tx("entries")
        .select("sequence")
        .where({ base_did: entry.baseDid, version: entry.version })
        .first();
      if (existing !== undefined) throw alreadyPublished(entry);
      // The sequence is drawn while the entry's name is locked, so the versions of one entry get
      // increasing sequences in the order they commit.
      const [row] = await tx("entries")
        .insert({ ...rowFromValidEntry(entry), sequence: tx.raw("nextval('entry_sequence')") })
        .returning("*");
      await recomputeLatest(tx, entry.baseDid);
      await notifyChange(tx, entry.baseDid);
      const stored = await tx<EntryRow>("entries").where({ sequence: (row as EntryRow).sequence }).first();
      return entryFromRow(stored as EntryRow);
    });
  } catch (error) {
    // The lock makes this unreachable between registries sharing one database; the constraint
    // stays the final word for anything that bypasses it.
    if (isUniqueViolation(error)) throw alreadyPublished(entry);
    throw error;
  }
}

/**
 * Creates the entry's name row on first publish, or locks the existing one, and returns its owner.
 * An upsert locks the row in the same round trip as it reads it.
 */
async function lockName(tx: Knex.Transaction, entry: ValidEntry): Promise<string> {
  const result = await tx.raw(
    `insert into entry_names (base_did, entry_type, name, publisher_did)
     values (?, ?, ?, ?)
     on conflict (base_did) do update set base_did = excluded.base_did
     returning publisher_did`,
    [entry.baseDid, entry.entryType, entry.name, entry.publisherDid],
  );
  return result.rows[0].publisher_did as string;
}

/**
 * Moves the latest flag to the best version of the entry. Two statements, because Postgres
 * checks the one-latest unique index row by row and one statement could pass through a state
 * with two latest rows.
 */
async function recomputeLatest(tx: Knex.Transaction, baseDid: string): Promise<void> {
  const best = tx("entries")
    .select("sequence")
    .where({ base_did: baseDid })
    .orderByRaw(LATEST_ORDER)
    .limit(1);
  await tx("entries")
    .update({ is_latest: false })
    .where({ base_did: baseDid, is_latest: true })
    .whereNot("sequence", best);
  await tx("entries")
    .update({ is_latest: true })
    .where({ base_did: baseDid, is_latest: false })
    .where("sequence", best);
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
      version === undefined ? query.where({ base_did: baseDid }) : query.where({ base_did: baseDid, version });
    await addressed(tx("entries"))
      .where({ status: "active" })
      .update({ status: "revoked", revoked_at: revocation.revokedAt, revocation_reason: revocation.reason });
    await recomputeLatest(tx, baseDid);
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
