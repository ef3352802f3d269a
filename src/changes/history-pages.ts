import { belongsToHistory, historySubject, recordSubject, type HistorySubject } from "../domain/record-subject.js";
import { InvalidArgumentError, NotFoundError } from "../errors.js";
import type { MerkleHasher } from "../transparency/merkle.js";
import { inclusionProofs } from "../transparency/proofs.js";
import type { IntegratedRecord, SignedCheckpoint, TreeStore } from "./transparency-log.js";

/**
 * The most records a history page holds: as many as an entry bundle of the log's tiles, so a
 * reader's bound on one answer is the one tlog-tiles already sets (16 MiB of records at most).
 */
export const HISTORY_PAGE_SIZE = 256;

export interface HistoryRecord extends IntegratedRecord {
  /** RFC 9162 PATH(index, checkpoint size). */
  readonly proof: readonly Uint8Array[];
}

export interface HistoryPage {
  readonly checkpoint: SignedCheckpoint;
  /** Oldest first. */
  readonly records: readonly HistoryRecord[];
  /** Set when the checkpoint holds more records about the DID: the index the next page starts after. */
  readonly nextAfter?: number;
}

/**
 * One page of the records about `did` that `checkpoint`'s tree holds, after index `after` (from
 * the first when undefined), each with its inclusion proof against that checkpoint.
 */
export async function readHistoryPage(
  store: TreeStore,
  hasher: MerkleHasher,
  did: string,
  after: number | undefined,
  checkpoint: SignedCheckpoint,
): Promise<HistoryPage> {
  const subject = historySubject(did);
  if ("error" in subject) throw InvalidArgumentError.of("did", subject.error);
  if (subject.version !== undefined && (await store.lastIntegratedRecordOf(subject.version, checkpoint.size)) === undefined)
    throw notInCheckpoint(did);
  const { records, more } = await selectRecords(store, subject, after ?? -1, checkpoint.size);
  if (after === undefined && records.length === 0) throw notInCheckpoint(did);
  const proofs = await inclusionProofs(
    records.map((record) => record.index),
    checkpoint.size,
    store,
    hasher,
  );
  const page = records.map((record, i) => ({ ...record, proof: proofs[i]! }));
  return more ? { checkpoint, records: page, nextAfter: records.at(-1)!.index } : { checkpoint, records: page };
}

/** Reads the name's records a page at a time, keeping those about the subject, until a page is full. */
async function selectRecords(
  store: TreeStore,
  subject: HistorySubject,
  after: number,
  below: number,
): Promise<{ records: IntegratedRecord[]; more: boolean }> {
  const records: IntegratedRecord[] = [];
  for (let cursor = after; ; ) {
    const chunk = await store.recordsOfName(subject.name, cursor, below, HISTORY_PAGE_SIZE + 1);
    for (const record of chunk) {
      // Every record of the name is about the bare DID; a version's history keeps those about it.
      if (subject.version !== undefined && !belongsToHistory(recordSubject(parseRecord(record.bytes)), subject)) continue;
      if (records.length === HISTORY_PAGE_SIZE) return { records, more: true };
      records.push(record);
    }
    if (chunk.length <= HISTORY_PAGE_SIZE) return { records, more: false };
    cursor = chunk.at(-1)!.index;
  }
}

function parseRecord(bytes: Uint8Array): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
}

function notInCheckpoint(did: string): NotFoundError {
  return new NotFoundError(`no record of ${did} in the log's checkpoint (a change is integrated within seconds)`);
}
