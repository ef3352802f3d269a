import type { Knex } from "knex";
import type { ValidEntry } from "../domain/entry-rules.js";
import { parseVersion } from "../domain/semver-order.js";
import type {
  ActionOutcome,
  ActionTarget,
  EntryOwner,
  EntryRepository,
  Revocation,
  SignedAction,
  StoredEntry,
  VersionColumnChanges,
} from "../entries/entry-repository.js";
import { LOG_APPEND_LOCK } from "./migrations/0011-log-append-lock.js";
import { AlreadyExistsError, FailedPreconditionError, PermissionDeniedError } from "../errors.js";
import { ENTRY_CHANGES_CHANNEL } from "./change-feed.js";
import { isUniqueViolation, translateDriverErrors } from "./driver-errors.js";
import { preparedQuery } from "./prepared-query.js";
import { createArgumentsOf, createdRow, entryFromRow, VERSION_SUMMARY_COLUMNS, versionSummaryFromRow, type EntryRow } from "./entry-row.js";

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
        const row = await knex<EntryRow>("entries").where({ base_did: baseDid, is_latest: true }).first();
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
        const row = await knex("entry_names").select("publisher_did", "entry_type").where({ base_did: baseDid }).first();
        return row === undefined ? undefined : ({ publisherDid: row.publisher_did, entryType: row.entry_type } satisfies EntryOwner);
      }),

    revoke: (baseDid, version, revocation) => translateDriverErrors(() => revoke(knex, baseDid, version, revocation)),

    applyAction: (baseDid, version, action, decide) => translateDriverErrors(() => applyAction(knex, baseDid, version, action, decide)),
  };
}

/** Raised by registry_create_entry (migration 0003). */
const OWNED_BY_ANOTHER_PUBLISHER = "RG403";
/** Raised by registry_create_entry (migration 0018). */
const NAME_ARCHIVED = "RG412";
/** A version is published once: this constraint decides it (migration 0012). */
const VERSION_ONCE_CONSTRAINT = "entries_version_once";

/** Versions are looked up by their sort key: one index serves lookup, uniqueness and order. */
function versionKey(version: string): string {
  const parsed = parseVersion(version);
  if ("error" in parsed) throw new TypeError(`not a valid version: ${version}`);
  return parsed.sortKey;
}

/** The whole new row as one jsonb record, named by column (migration 0016), so a new field needs no new argument. */
const CREATE_ENTRY_SQL = "select * from registry_create_entry($1::jsonb)";

/** One round trip: the whole create transaction is registry_create_entry (migration 0003). */
async function createEntry(knex: Knex, entry: ValidEntry): Promise<StoredEntry> {
  const created = createArgumentsOf(entry);
  try {
    const [assigned] = await preparedQuery<{ assigned_sequence: string; made_latest: boolean }>(
      knex,
      "registry_create_entry",
      CREATE_ENTRY_SQL,
      [JSON.stringify(created)],
    );
    if (assigned === undefined) throw new Error("registry_create_entry returned no row");
    return entryFromRow(createdRow(created, { sequence: assigned.assigned_sequence, isLatest: assigned.made_latest }));
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === OWNED_BY_ANOTHER_PUBLISHER) {
      throw new PermissionDeniedError(`${entry.baseDid} is owned by another publisher`);
    }
    if (code === NAME_ARCHIVED) {
      throw new FailedPreconditionError(`${entry.baseDid} is archived: no new version can be published until it is unarchived`);
    }
    if (isUniqueViolation(error, VERSION_ONCE_CONSTRAINT)) throw alreadyPublished(entry);
    throw error;
  }
}

async function revoke(knex: Knex, baseDid: string, version: string | undefined, revocation: Revocation): Promise<StoredEntry[]> {
  return knex.transaction(async (tx) => {
    const name = await tx("entry_names").select("base_did").where({ base_did: baseDid }).forUpdate().first();
    if (name === undefined) return [];
    const addressed = (query: Knex.QueryBuilder) =>
      version === undefined ? query.where({ base_did: baseDid }) : query.where({ base_did: baseDid, version_key: versionKey(version) });
    const changed: { sequence: string }[] = await addressed(tx("entries"))
      .whereNull("revoked_at")
      .whereNull("removal")
      .update({ revoked_at: revocation.revokedAt, revocation_reason: revocation.reason }, ["sequence"]);
    await tx.raw("select registry_recompute_latest(?)", [baseDid]);
    await appendRevocations(
      tx,
      changed.map((row) => row.sequence),
      revocation,
    );
    await notifyChange(tx, baseDid);
    const rows: EntryRow[] = await addressed(tx("entries")).select("*").orderBy("version_key", "desc");
    return rows.map(entryFromRow);
  });
}

/**
 * One log record per version this revocation changed (migration 0008), in sequence order, after
 * latest was recomputed so each record says what latest became. Versions that were already
 * revoked did not change and get none.
 */
async function appendRevocations(tx: Knex.Transaction, sequences: readonly string[], revocation: Revocation): Promise<void> {
  for (const sequence of [...sequences].sort((a, b) => Number(BigInt(a) - BigInt(b)))) {
    await tx.raw("select registry_log_append('entry.revoked', ?, ?, ?, ?, ?)", [
      sequence,
      revocation.did,
      revocation.reason,
      revocation.signature,
      revocation.signer,
    ]);
  }
}

/**
 * A signed action (migration 0018): the name locked, the decision made on what it addresses, the
 * request's issuedAt kept (a request that changed nothing too, so it cannot be replayed later),
 * and one log record when anything changed.
 */
async function applyAction(
  knex: Knex,
  baseDid: string,
  version: string | undefined,
  action: SignedAction,
  decide: (target: ActionTarget) => ActionOutcome,
): Promise<StoredEntry[] | undefined> {
  return knex.transaction(async (tx) => {
    const name = await tx("entry_names").select("publisher_did", "entry_type", "archive").where({ base_did: baseDid }).forUpdate().first();
    if (name === undefined) return undefined;
    const addressed = (query: Knex.QueryBuilder) =>
      version === undefined ? query.where({ base_did: baseDid }) : query.where({ base_did: baseDid, version_key: versionKey(version) });
    const rows: EntryRow[] = await addressed(tx("entries")).select("*").orderBy("version_key", "desc");
    if (rows.length === 0) return [];
    const clock = await tx("signed_action_clock")
      .select("issued_at")
      .where({ payload_type: action.payloadType, base_did: baseDid })
      .first();
    const outcome = decide({
      owner: { publisherDid: name.publisher_did, entryType: name.entry_type },
      archive: name.archive,
      versions: rows.map(entryFromRow),
      lastIssuedAt: clock?.issued_at,
    });
    await tx("signed_action_clock")
      .insert({ payload_type: action.payloadType, base_did: baseDid, issued_at: action.issuedAt })
      .onConflict(["payload_type", "base_did"])
      .merge(["issued_at"]);
    const changed = new Set(outcome.versions.map((change) => change.sequence.toString()));
    for (const { sequence, columns } of outcome.versions) {
      await tx("entries").where({ sequence: sequence.toString() }).update(columnValues(columns));
    }
    if (outcome.archive !== undefined) {
      await tx("entry_names").where({ base_did: baseDid }).update({ archive: outcome.archive });
      const versions: { sequence: string }[] = await tx("entries")
        .where({ base_did: baseDid })
        .update({ archive: outcome.archive }, ["sequence"]);
      for (const row of versions) changed.add(row.sequence);
    }
    if (changed.size > 0) {
      await tx.raw("select registry_recompute_latest(?)", [baseDid]);
      await appendAction(tx, baseDid, [...changed], action);
      await notifyChange(tx, baseDid);
    }
    const after: EntryRow[] = await addressed(tx("entries")).select("*").orderBy("version_key", "desc");
    return after.map(entryFromRow);
  });
}

/** jsonb columns go as JSON text; the driver would send an array as a Postgres array. */
function columnValues(columns: VersionColumnChanges): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(columns)) {
    values[column] = column === "tags" || value === null || typeof value !== "object" ? value : JSON.stringify(value);
  }
  return values;
}

/** One record for the request: the changed versions' states in sequence order, and which versions it is about. */
async function appendAction(tx: Knex.Transaction, baseDid: string, sequences: readonly string[], action: SignedAction): Promise<void> {
  const ordered = [...sequences].sort((a, b) => Number(BigInt(a) - BigInt(b)));
  await tx.raw("select pg_advisory_xact_lock(?)", [LOG_APPEND_LOCK]);
  const [appended] = (
    await tx.raw(
      `insert into registry_log (log_index, kind, base_did, entry_states, request, latest_version)
       select (select coalesce(max(log_index), -1) + 1 from registry_log), ?, ?,
              (select jsonb_agg(to_jsonb(e) order by e.sequence) from entries e where e.sequence = any(?::bigint[])),
              ?::jsonb,
              coalesce((select l.version from entries l where l.base_did = ? and l.is_latest), '')
       returning log_index`,
      [action.kind, baseDid, ordered, JSON.stringify(action.request), baseDid],
    )
  ).rows as { log_index: string }[];
  await tx.raw(
    "insert into registry_log_versions (entry_did, log_index) select entry_did, ? from entries where sequence = any(?::bigint[])",
    [appended!.log_index, ordered],
  );
}

/** Tells every process's cache, on commit, that this entry changed (see change-feed.ts). */
async function notifyChange(tx: Knex.Transaction, baseDid: string): Promise<void> {
  await tx.raw("select pg_notify(?, ?)", [ENTRY_CHANGES_CHANNEL, baseDid]);
}

function alreadyPublished(entry: ValidEntry): AlreadyExistsError {
  return new AlreadyExistsError(`${entry.entryDid} was already published; a version can be published only once, even after revocation`);
}
