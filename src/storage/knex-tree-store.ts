import type { Knex } from "knex";
import type { IntegratedRecord, SignedCheckpoint, TreeHead, TreeStore } from "../changes/transparency-log.js";
import { storedHashIndex, type StoredHash, type StoredHashAddress } from "../transparency/stored-hashes.js";
import { translateDriverErrors } from "./driver-errors.js";
import { changeFromRow, LOG_ROW_COLUMNS, type LogRow } from "./knex-change-log.js";

/** The row of registry_tree_head as the driver returns it. */
export interface HeadRow {
  size: string;
  root: Buffer;
}

export function treeHeadOf(row: HeadRow): TreeHead {
  return { size: Number(row.size), root: new Uint8Array(row.root) };
}

/** Reads stored hashes of registry_tree_hashes, by address; throws when one is missing. */
export const storedHashReader = (db: Knex | Knex.Transaction) => async (addresses: readonly StoredHashAddress[]) => {
  const keys = addresses.map(storedHashIndex);
  const rows: { stored_index: string; hash: Buffer }[] = await db("registry_tree_hashes")
    .select("stored_index", "hash")
    .whereIn("stored_index", [...new Set(keys)].map(String));
  const byKey = new Map(rows.map((row) => [Number(row.stored_index), new Uint8Array(row.hash)]));
  return keys.map((key) => {
    const hash = byKey.get(key);
    if (hash === undefined) throw new Error(`stored hash ${key} is missing`);
    return hash;
  });
};

/** Writes a tree's growth: its new stored hashes and its new head. */
export async function writeTreeGrowth(tx: Knex.Transaction, storedHashes: readonly StoredHash[], head: TreeHead): Promise<void> {
  await tx.raw(
    "insert into registry_tree_hashes (stored_index, hash) select k, decode(h, 'hex') from unnest(?::bigint[], ?::text[]) as v(k, h)",
    [storedHashes.map((hash) => String(storedHashIndex(hash))), storedHashes.map((hash) => hex(hash.hash))],
  );
  await tx("registry_tree_head").update({ size: String(head.size), root: Buffer.from(head.root) });
}

/** The transparency log's tables (migration 0009) through knex. */
export function createKnexTreeStore(knex: Knex): TreeStore {
  return {
    readHashes: (addresses) => translateDriverErrors(() => storedHashReader(knex)(addresses)),

    integrate: (work) =>
      translateDriverErrors(() =>
        knex.transaction(async (tx) => {
          // Another process integrating holds the row: skip rather than queue behind it.
          const head: HeadRow | undefined = await tx("registry_tree_head").select("size", "root").forUpdate().skipLocked().first();
          if (head === undefined) return undefined;
          const treeHead = treeHeadOf(head);
          return work({
            head: treeHead,
            readHashes: storedHashReader(tx),
            async pendingChanges(limit) {
              const rows: LogRow[] = await tx("registry_log")
                .select(...LOG_ROW_COLUMNS)
                .where("log_index", ">=", String(treeHead.size))
                .orderBy("log_index")
                .limit(limit);
              return rows.map(changeFromRow);
            },
            async write({ storedHashes, records, head: next, checkpoint }) {
              await writeTreeGrowth(tx, storedHashes, next);
              await tx.raw(
                "update registry_log as l set record = decode(v.h, 'hex') from unnest(?::bigint[], ?::text[]) as v(i, h) where l.log_index = v.i",
                [records.map((record) => String(record.index)), records.map((record) => hex(record.bytes))],
              );
              await tx("registry_checkpoints").insert({
                size: String(checkpoint.size),
                root: Buffer.from(checkpoint.root),
                note: checkpoint.note,
              });
            },
          });
        }),
      ),

    latestCheckpoint: () =>
      translateDriverErrors(async () =>
        checkpointOf(await knex("registry_checkpoints").select("size", "root", "note").orderBy("size", "desc").first()),
      ),

    checkpointAt: (size) =>
      translateDriverErrors(async () =>
        checkpointOf(await knex("registry_checkpoints").select("size", "root", "note").where("size", String(size)).first()),
      ),

    recordsOfName: (baseDid, after, below, limit) =>
      translateDriverErrors(async () => {
        // registry_log_name (migration 0017) walks the name's records in index order.
        const rows: { log_index: string; kind: string; record: Buffer | null }[] = await knex("registry_log")
          .select("log_index", "kind", "record")
          .where("base_did", baseDid)
          .andWhere("log_index", ">", String(after))
          .andWhere("log_index", "<", String(below))
          .orderBy("log_index")
          .limit(limit);
        return rows.map((row): IntegratedRecord => {
          if (row.record === null) throw new Error(`record ${row.log_index} is below the tree size but not integrated`);
          return { index: Number(row.log_index), kind: row.kind, bytes: new Uint8Array(row.record) };
        });
      }),

    records: (from, count) =>
      translateDriverErrors(async () => {
        const rows: { record: Buffer | null }[] = await knex("registry_log")
          .select("record")
          .where("log_index", ">=", String(from))
          .andWhere("log_index", "<", String(from + count))
          .orderBy("log_index");
        if (rows.length !== count || rows.some((row) => row.record === null))
          throw new Error(`records [${from}, ${from + count}) are not all integrated`);
        return rows.map((row) => new Uint8Array(row.record as Buffer));
      }),

    lastIntegratedRecordOf: (entryDid, treeSize) =>
      translateDriverErrors(async () => {
        const row: { index?: string | null } | undefined = await knex("registry_log")
          .max({ index: "log_index" })
          .whereRaw("entry_state->>'entry_did' = ?", [entryDid])
          .andWhere("log_index", "<", String(treeSize))
          .first();
        return row?.index === null || row?.index === undefined ? undefined : Number(row.index);
      }),
  };
}

function checkpointOf(row: { size: string; root: Buffer; note: string } | undefined): SignedCheckpoint | undefined {
  return row === undefined ? undefined : { size: Number(row.size), root: new Uint8Array(row.root), note: row.note };
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}
