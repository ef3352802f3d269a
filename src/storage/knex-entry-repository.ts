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
} from "../entries/entry-repository.js";
import type { MarkValue } from "../domain/entry-fields.js";
import { entryRowFromState } from "./knex-change-log.js";
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

/** Raised by registry_apply_action (migration 0019) when the name changed after it was read. */
const NAME_CHANGED = "RG409";
/** Enough for any real contention on one name; past it the caller sees the conflict. */
const ACTION_ATTEMPTS = 8;

/**
 * A signed action (migrations 0018, 0019): one statement reads what `decide` needs, one writes
 * its decision with the request's issuedAt (a request that changed nothing too, so it cannot be
 * replayed later) and, when anything changed, one log record. The write refuses a decision made
 * on a name that changed since; then the name is read and decided again.
 */
async function applyAction(
  knex: Knex,
  baseDid: string,
  version: string | undefined,
  action: SignedAction,
  decide: (target: ActionTarget) => ActionOutcome,
): Promise<StoredEntry[] | undefined> {
  const key = version === undefined ? null : versionKey(version);
  for (let attempt = 1; ; attempt++) {
    const [read] = await preparedQuery<{ target: ActionTargetRow | null }>(knex, "registry_action_target", ACTION_TARGET_SQL, [
      baseDid,
      key,
      action.payloadType,
    ]);
    const target = read?.target ?? null;
    if (target === null) return undefined;
    const outcome = decide({
      owner: { publisherDid: target.owner, entryType: target.entryType },
      archive: target.archive,
      versions: target.versions.map(entryOfState),
      lastIssuedAt: target.clock === null ? undefined : new Date(target.clock),
    });
    const applied = {
      base_did: baseDid,
      version_key: key,
      kind: action.kind,
      payload_type: action.payloadType,
      issued_at: action.issuedAt.toISOString(),
      request: action.request,
      head: target.head,
      clock: target.clock,
      changes: outcome.versions.map(({ sequence, columns }) => ({ sequence: sequence.toString(), columns })),
      archive_changed: outcome.archive !== undefined,
      archive: outcome.archive ?? null,
    };
    try {
      const [written] = await preparedQuery<{ after: Record<string, unknown>[] }>(knex, "registry_apply_action", APPLY_ACTION_SQL, [
        JSON.stringify(applied),
      ]);
      return (written?.after ?? []).map(entryOfState);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== NAME_CHANGED || attempt === ACTION_ATTEMPTS) throw error;
    }
  }
}

const ACTION_TARGET_SQL = "select registry_action_target($1, $2, $3) as target";
const APPLY_ACTION_SQL = "select registry_apply_action($1::jsonb) as after";

/** What registry_action_target answers (migration 0019). */
interface ActionTargetRow {
  readonly owner: string;
  readonly entryType: string;
  readonly archive: MarkValue | null;
  readonly clock: string | null;
  readonly head: string | number | null;
  readonly versions: Record<string, unknown>[];
}

function entryOfState(state: Record<string, unknown>): StoredEntry {
  return entryFromRow(entryRowFromState(state));
}

/** Tells every process's cache, on commit, that this entry changed (see change-feed.ts). */
async function notifyChange(tx: Knex.Transaction, baseDid: string): Promise<void> {
  await tx.raw("select pg_notify(?, ?)", [ENTRY_CHANGES_CHANNEL, baseDid]);
}

function alreadyPublished(entry: ValidEntry): AlreadyExistsError {
  return new AlreadyExistsError(`${entry.entryDid} was already published; a version can be published only once, even after revocation`);
}
