import type { Knex } from "knex";
import type { ChangeKind, ChangeLogRepository, LoggedChange, SignedRequest } from "../changes/change-log.js";
import { ENTRY_FIELDS } from "../domain/entry-fields.js";
import { translateDriverErrors } from "./driver-errors.js";
import { entryFromRow, type EntryRow } from "./entry-row.js";

/** The columns a change is read from; not `record`, the bytes the tree hashes, which only tiles and proofs need. */
export const LOG_ROW_COLUMNS = [
  "log_index",
  "kind",
  "entry_state",
  "latest_version",
  "revocation_did",
  "revocation_reason",
  "revocation_signature",
  "revocation_signer",
  "logged_at",
  "entry_states",
  "request",
] as const;

/** A row of `registry_log` (migration 0008) as the `pg` driver returns it. */
export interface LogRow {
  log_index: string;
  kind: ChangeKind;
  entry_state: Record<string, unknown> | null;
  entry_states: Record<string, unknown>[] | null;
  request: SignedRequest | null;
  latest_version: string;
  revocation_did: string | null;
  revocation_reason: string | null;
  revocation_signature: string | null;
  revocation_signer: string | null;
  logged_at: Date;
}

export function createKnexChangeLog(knex: Knex): ChangeLogRepository {
  return {
    listChanges: (after, limit, maxBytes) =>
      translateDriverErrors(async () => {
        // The running weight is summed in index order over the limited rows; the outer filter keeps
        // the prefix that starts within maxBytes, so the first record always comes, however large.
        // One statement is one snapshot: the size read beside the page is never below its end.
        const limited = knex("registry_log")
          .select(
            ...LOG_ROW_COLUMNS,
            "state_bytes",
            knex.raw("sum(state_bytes) over (order by log_index) as running_bytes"),
            knex.raw("(select max(log_index) from registry_log) as last_index"),
          )
          .where("log_index", ">", after === undefined ? "-1" : after.toString())
          .orderBy("log_index")
          .limit(limit);
        const rows: (LogRow & { state_bytes: number; last_index: string | null })[] = await knex
          .select("*")
          .from(limited.as("page"))
          .whereRaw("running_bytes - state_bytes < ?", [maxBytes])
          .orderBy("log_index");
        const size = rows.length === 0 ? await logSize(knex) : BigInt(rows[0]!.last_index!) + 1n;
        let bytes = 0;
        for (const row of rows) bytes += row.state_bytes;
        return { changes: rows.map(changeFromRow), size, bytes };
      }),

    size: () =>
      translateDriverErrors(async () => {
        return logSize(knex);
      }),
  };
}

/** The number of records: indexes are gapless from 0, so the largest plus one (migration 0011). */
export async function logSize(db: Knex | Knex.Transaction): Promise<bigint> {
  const [row] = await db("registry_log").max({ last: "log_index" });
  const last = (row as { last: string | null } | undefined)?.last;
  return last === null || last === undefined ? 0n : BigInt(last) + 1n;
}

/** A record of registry_log as the change it is. */
export function changeFromRow(row: LogRow): LoggedChange {
  const base = { index: BigInt(row.log_index), latestVersion: row.latest_version, loggedAt: row.logged_at };
  if (row.kind === "entry.lifecycle" || row.kind === "entry.moderation") {
    const entries = (row.entry_states ?? []).map((state) => entryFromRow(entryRowFromState(state)));
    return { ...base, kind: row.kind, entries, request: row.request ?? {} };
  }
  const entry = entryFromRow(entryRowFromState(row.entry_state ?? {}));
  if (row.kind !== "entry.revoked") return { ...base, kind: row.kind, entry };
  return {
    ...base,
    kind: row.kind,
    entry,
    revocation: {
      did: row.revocation_did ?? "",
      reason: row.revocation_reason ?? "",
      signature: row.revocation_signature ?? "",
      signer: row.revocation_signer ?? "",
    },
  };
}

/**
 * The entries row a record kept, from its JSON form (to_jsonb): times come back as text and
 * bigints as numbers, which the row mapper expects as Date and text.
 */
export function entryRowFromState(state: Record<string, unknown>): EntryRow {
  const row: Record<string, unknown> = { ...state };
  for (const field of ENTRY_FIELDS) {
    const value = state[field.column];
    if (value === null || value === undefined) continue;
    if (field.kind === "time") row[field.column] = new Date(value as string);
    else if (field.kind === "number") row[field.column] = String(value);
  }
  return row as unknown as EntryRow;
}
