import type { Knex } from "knex";
import { MirrorRefusedError } from "../mirror/mirror-errors.js";
import type { MirroredAction, MirroredChange, MirroredEntryChange, MirrorStore } from "../mirror/mirror-store.js";
import { WITHHELD_VALUES } from "../domain/version-state.js";
import { translatedDriverError, violatedUniqueConstraint } from "./driver-errors.js";
import { createArgumentsOf, type EntryRow } from "./entry-row.js";
import { logSize } from "./knex-change-log.js";
import { createKnexTreeStore, storedHashReader, treeHeadOf, writeTreeGrowth, type HeadRow } from "./knex-tree-store.js";
import { LOG_APPEND_LOCK } from "./migrations/0011-log-append-lock.js";

/**
 * A mirror's writes through knex: each batch of the source's records lands in the entries, the
 * change log (with the source's record bytes) and the tree in one transaction, holding the log's
 * append lock and the tree's row so no local write or integration interleaves. The first batch also
 * records whose log this is (`sourceKey`, the source's verifier key), for the registry served on it.
 */
export function createKnexMirrorStore(knex: Knex, sourceKey: string): MirrorStore {
  return {
    async position() {
      try {
        const head: HeadRow = await knex("registry_tree_head").select("size", "root").first();
        const checkpoint = await createKnexTreeStore(knex).latestCheckpoint();
        return {
          logSize: Number(await logSize(knex)),
          tree: treeHeadOf(head),
          checkpointNote: checkpoint?.note,
          sourceKey: await mirroredLogKey(knex),
        };
      } catch (error) {
        throw translatedDriverError(error);
      }
    },

    async recordsAbout(baseDids) {
      try {
        const rows: { base_did: string; record: Buffer }[] = await knex("registry_log")
          .select("base_did", "record")
          .whereIn("base_did", baseDids)
          .orderBy("log_index");
        const records = new Map<string, Uint8Array[]>();
        for (const row of rows) {
          const held = records.get(row.base_did) ?? [];
          held.push(new Uint8Array(row.record));
          records.set(row.base_did, held);
        }
        return records;
      } catch (error) {
        throw translatedDriverError(error);
      }
    },

    async append({ changes, extend, checkpointNote }) {
      try {
        await knex.transaction(async (tx) => {
          await tx.raw("select pg_advisory_xact_lock(?)", [LOG_APPEND_LOCK]);
          await recordSource(tx, sourceKey);
          const head = treeHeadOf(await tx("registry_tree_head").select("size", "root").forUpdate().first());
          const records = Number(await logSize(tx));
          if (records !== head.size)
            throw new MirrorRefusedError(`this database's log has ${records} records but its tree ${head.size}: it is not a mirror`);
          const grown = await extend({ head, readHashes: storedHashReader(tx) });
          for (const change of changes) await applyChange(tx, change);
          await writeTreeGrowth(tx, grown.storedHashes, grown.head);
          if (checkpointNote !== undefined) {
            await tx("registry_checkpoints").insert({
              size: String(grown.head.size),
              root: Buffer.from(grown.head.root),
              note: checkpointNote,
            });
          }
          // Caches and live change feeds of servers on this database learn of the changes as of a local write.
          for (const baseDid of new Set(changes.map(baseDidOf))) {
            await tx.raw("select pg_notify('registry_entry_changes', ?)", [baseDid]);
          }
        });
      } catch (error) {
        if (error instanceof MirrorRefusedError) throw error;
        const constraint = violatedUniqueConstraint(error);
        // Not the database's state but the mirror's own writes: said as such, never as an outage.
        if (constraint !== undefined)
          throw new Error(`the mirror's batch broke the unique constraint ${constraint}; nothing of it was written`, { cause: error });
        throw translatedDriverError(error);
      }
    },
  };
}

/**
 * Marks the database as the copy of the source's log, once. Another source's log cannot follow:
 * its checkpoints do not verify against the checkpoint kept here (log-mirror.ts refuses first).
 */
async function recordSource(tx: Knex.Transaction, sourceKey: string): Promise<void> {
  await tx("registry_log_source").insert({ verifier_key: sourceKey }).onConflict("only_row").ignore();
}

/** The verifier key of the log this database mirrors, or undefined when it keeps a log of its own. */
export async function mirroredLogKey(knex: Knex): Promise<string | undefined> {
  const row: { verifier_key: string } | undefined = await knex("registry_log_source").select("verifier_key").first();
  return row?.verifier_key;
}

/**
 * What each unique constraint that a change can break says about this database: a row is already
 * there that the source's log did not put there. Any other violation is a fault of the mirror.
 */
const WRITTEN_OUTSIDE_THE_LOG: Readonly<Record<string, (change: MirroredEntryChange) => string>> = Object.freeze({
  entries_version_once: (change) => `${change.entry.entryDid} is already in this database outside its log`,
  entries_pkey: (change) => `sequence ${change.state.sequence} is already taken in this database by an entry outside its log`,
});

function baseDidOf(change: MirroredChange): string {
  return "entry" in change ? change.entry.baseDid : change.baseDid;
}

/** The change applied, or refused (MirrorRefusedError) when this database holds a row the source's log did not write. */
async function applyChange(tx: Knex.Transaction, change: MirroredChange): Promise<void> {
  if (!("entry" in change)) return writeAction(tx, change);
  try {
    await writeChange(tx, change);
  } catch (error) {
    const constraint = violatedUniqueConstraint(error);
    const describe = constraint === undefined ? undefined : WRITTEN_OUTSIDE_THE_LOG[constraint];
    if (describe === undefined) throw error;
    throw new MirrorRefusedError(`record ${change.index}: ${describe(change)}: mirror into a database of its own`);
  }
}

/** The change applied to its entry, then recorded at its index with the source's bytes. */
async function writeChange(tx: Knex.Transaction, change: MirroredEntryChange): Promise<void> {
  const { entry, state } = change;
  if (change.kind === "entry.created") {
    await tx("entry_names")
      .insert({ base_did: entry.baseDid, entry_type: entry.entryType, name: entry.name, publisher_did: entry.publisherDid })
      .onConflict("base_did")
      .ignore();
    const owner: { publisher_did: string } = await tx("entry_names").select("publisher_did").where("base_did", entry.baseDid).first();
    if (owner.publisher_did !== entry.publisherDid)
      throw new MirrorRefusedError(`record ${change.index}: ${entry.baseDid} belongs to another publisher here`);
    const row: EntryRow = {
      ...createArgumentsOf(entry),
      sequence: state.sequence.toString(),
      status: state.status,
      revoked_at: state.revokedAt,
      revocation_reason: state.revocationReason,
      // Made latest below, once the version it replaces has given that up.
      is_latest: false,
      deprecation: null,
      yank: null,
      quarantine: null,
      removal: null,
      archive: null,
      deprecated: false,
      archived: false,
    };
    await tx("entries").insert({ ...row, data: JSON.stringify(row.data) });
  } else {
    // Status follows from the marks (migration 0018's trigger); a deprecated or yanked version may be revoked.
    const updated = await tx("entries")
      .update({ revoked_at: state.revokedAt, revocation_reason: state.revocationReason })
      .where("entry_did", entry.entryDid)
      .whereNull("revoked_at")
      .whereNull("removal");
    if (updated !== 1) throw new MirrorRefusedError(`record ${change.index} revokes ${entry.entryDid}, which is not revocable here`);
  }
  await moveLatest(tx, entry.baseDid, change.latestVersion);
  const revocation = change.revocation;
  await tx.raw(
    `insert into registry_log (log_index, kind, base_did, entry_state, latest_version, revocation_did,
                               revocation_reason, revocation_signature, revocation_signer, logged_at, record)
     select ?, ?, e.base_did, to_jsonb(e), ?, ?, ?, ?, ?, ?, ? from entries e where e.entry_did = ?`,
    [
      String(change.index),
      change.kind,
      change.latestVersion,
      revocation?.did ?? null,
      revocation?.reason ?? null,
      revocation?.signature ?? null,
      revocation?.signer ?? null,
      change.loggedAt,
      Buffer.from(change.bytes),
      entry.entryDid,
    ],
  );
}

/**
 * A lifecycle or moderation request applied as the fold gave it (log-mirror.ts): each changed
 * version's marks (a removal also withholds its fields), the name's archive on the name and every
 * version, then one log row with the changed versions' states and the request, as
 * entry-action-service.ts and knex-entry-repository.ts write them at the source.
 */
async function writeAction(tx: Knex.Transaction, change: MirroredAction): Promise<void> {
  for (const { entryDid, marks } of change.versions) {
    const withheld = marks.removal === null ? {} : { ...WITHHELD_VALUES, data: JSON.stringify(WITHHELD_VALUES.data) };
    const columns = Object.fromEntries(Object.entries(marks).map(([mark, value]) => [mark, value === null ? null : JSON.stringify(value)]));
    const updated = await tx("entries")
      .update({ ...columns, ...withheld })
      .where("entry_did", entryDid);
    if (updated !== 1) throw new MirrorRefusedError(`record ${change.index} acts on ${entryDid}, which is not here`);
  }
  if (change.archive !== undefined) {
    const archive = change.archive === null ? null : JSON.stringify(change.archive);
    await tx("entry_names").update({ archive }).where("base_did", change.baseDid);
    await tx("entries").update({ archive }).where("base_did", change.baseDid);
  }
  await moveLatest(tx, change.baseDid, change.latestVersion);
  const dids = change.versions.map((version) => version.entryDid);
  await tx.raw(
    `insert into registry_log (log_index, kind, base_did, entry_states, request, latest_version, logged_at, record)
     select ?, ?, ?, (select jsonb_agg(to_jsonb(e) order by e.sequence) from entries e where e.entry_did = any(?::text[])), ?::jsonb, ?, ?, ?`,
    [
      String(change.index),
      change.kind,
      change.baseDid,
      dids,
      JSON.stringify(change.request),
      change.latestVersion,
      change.loggedAt,
      Buffer.from(change.bytes),
    ],
  );
  await tx("registry_log_versions").insert(dids.map((entryDid) => ({ entry_did: entryDid, log_index: String(change.index) })));
}

/**
 * Makes `version` the entry's one latest, as the source's record says. The old latest is cleared
 * first: the unique index entries_one_latest is checked row by row, so setting the new one first
 * would see two.
 */
async function moveLatest(tx: Knex.Transaction, baseDid: string, version: string): Promise<void> {
  await tx("entries").update({ is_latest: false }).where({ base_did: baseDid, is_latest: true }).whereNot("version", version);
  await tx("entries").update({ is_latest: true }).where({ base_did: baseDid, version, is_latest: false });
}
