import { belongsToHistory, historySubject, recordSubject, type HistorySubject } from "../domain/record-subject.js";
import {
  LogVerificationError,
  parseLogRecord,
  verifyCheckpoint,
  verifyRecordInclusion,
  verifyRecordSignatures,
  type LogRecord,
  type VerifiedCheckpoint,
} from "./log-verifier.js";
import type { NoteKey } from "../transparency/signed-note.js";

/**
 * Verifiers of a name's or a version's history (GetEntryHistory, GET /v1/entries/{did}/history),
 * for Node and browsers: every record against one signed checkpoint (docs/transparency.md).
 */

/** One page as the registry answers it. */
export interface HistoryPageAnswer {
  readonly checkpoint: string;
  readonly treeSize: number | bigint;
  readonly records: readonly {
    readonly index: number | bigint;
    readonly kind: string;
    /** The record's exact bytes as text. */
    readonly record: string;
    readonly inclusionProof: readonly Uint8Array[];
  }[];
  readonly nextAfter?: number | bigint;
}

/** A record of a history whose inclusion, subject and signatures verified. */
export interface VerifiedHistoryRecord {
  readonly index: number;
  readonly kind: string;
  /** The bytes the log hashed. */
  readonly bytes: Uint8Array;
  readonly record: LogRecord;
  readonly inclusionProof: readonly Uint8Array[];
}

export interface VerifiedHistory {
  readonly checkpoint: VerifiedCheckpoint;
  /** Oldest first. */
  readonly records: readonly VerifiedHistoryRecord[];
}

/**
 * Fetches every page of `did`'s history with `page(after, treeSize)` and checks all of it:
 *  1. the first page's checkpoint is signed by `logKey`, and every later page is against the same one;
 *  2. each record is in that checkpoint's tree at its index (RFC 9162 inclusion);
 *  3. each record says the index and kind it was served with, and is about `did`
 *     (domain/record-subject.ts: the version, or the whole name);
 *  4. indexes only grow, each page starting after the previous one;
 *  5. every signature in each record verifies (verifyRecordSignatures).
 * Throws LogVerificationError naming the first failure.
 */
export async function fetchVerifiedHistory(
  did: string,
  logKey: NoteKey,
  page: (after: bigint | undefined, treeSize: bigint) => Promise<HistoryPageAnswer>,
): Promise<VerifiedHistory> {
  // The registry refuses a DID that is not one (invalid_argument naming did) before anything is checked.
  const first = await page(undefined, 0n);
  const subject = historySubject(did);
  if ("error" in subject) throw new LogVerificationError(`${did} is not an entry DID: ${subject.error}`);
  const checkpoint = await verifyCheckpoint(first.checkpoint, logKey);
  const records: VerifiedHistoryRecord[] = [];
  for (let answer = first; ; ) {
    if (answer.checkpoint !== checkpoint.note || Number(answer.treeSize) !== checkpoint.treeSize)
      throw new LogVerificationError("a page of the history is not against the checkpoint of its first page");
    for (const served of answer.records) records.push(await verifyHistoryRecord(served, subject, checkpoint, records.at(-1)?.index));
    if (answer.nextAfter === undefined) return { checkpoint, records };
    if (answer.records.length === 0 || BigInt(answer.nextAfter) !== BigInt(records.at(-1)!.index))
      throw new LogVerificationError("a page of the history does not say where it ended");
    answer = await page(BigInt(answer.nextAfter), BigInt(checkpoint.treeSize));
  }
}

/** Checks one served record of a history; `previous` is the index of the record before it. */
export async function verifyHistoryRecord(
  served: HistoryPageAnswer["records"][number],
  subject: HistorySubject,
  checkpoint: VerifiedCheckpoint,
  previous: number | undefined,
): Promise<VerifiedHistoryRecord> {
  const index = Number(served.index);
  if (previous !== undefined && index <= previous)
    throw new LogVerificationError(`record ${index} comes after record ${previous}: a history is oldest first, each record once`);
  const bytes = new TextEncoder().encode(served.record);
  verifyRecordInclusion(bytes, index, served.inclusionProof, checkpoint);
  const record = parseLogRecord(bytes);
  if (record.index !== String(index)) throw new LogVerificationError(`record ${index} says index ${record.index}`);
  if (record.kind !== served.kind) throw new LogVerificationError(`record ${index} is of kind ${record.kind}, not ${served.kind}`);
  const about = recordSubject(record);
  if (!belongsToHistory(about, subject))
    throw new LogVerificationError(`record ${index} is about ${about ?? "nothing"}, not ${subject.version ?? subject.name}`);
  await verifyRecordSignatures(record);
  return { index, kind: record.kind, bytes, record, inclusionProof: served.inclusionProof };
}
