import { PUBLISHER_FIELDS } from "../domain/entry-fields.js";
import { validateEntry, type ValidEntry } from "../domain/entry-rules.js";
import type { FoldOptions, NameHistory } from "../domain/history-fold.js";
import { statusOf } from "../domain/version-state.js";
import { InvalidArgumentError } from "../errors.js";
import {
  LogVerificationError,
  parseLogKey,
  parseLogRecord,
  verifyCheckpoint,
  verifyCheckpointsConsistent,
  verifyRecordSignatures,
  type LogRecord,
  type VerifiedCheckpoint,
} from "../sdk/log-verifier.js";
import { foldRecord, foldRecords, markJson, recordName, versionMarks } from "../sdk/record-events.js";
import { hashesEqual, type MerkleHasher } from "../transparency/merkle.js";
import type { NoteKey } from "../transparency/signed-note.js";
import { appendLeaves } from "../transparency/stored-hashes.js";
import { verifyConsistency } from "../transparency/verify.js";
import { MirrorRefusedError, MirrorStoppedError } from "./mirror-errors.js";
import { DEFAULT_MIRROR_SETTINGS } from "./mirror-settings.js";
import type { MirroredAction, MirroredChange, MirroredEntryChange, MirrorPosition, MirrorStore } from "./mirror-store.js";

/** The registry being mirrored: its signed checkpoint, proofs and records (c2sp.org/tlog-tiles and /v1/log). */
export interface LogSource {
  /** Where it is, for messages. */
  readonly url: string;
  /** The verifier key it publishes for its log (GET /v1/log/key): trusted only when nothing is pinned. */
  logKey(): Promise<string>;
  /** Its latest checkpoint, as the signed note it serves. */
  checkpoint(): Promise<string>;
  /** The RFC 9162 consistency proof between two of its tree sizes. */
  consistencyProof(fromSize: number, toSize: number): Promise<Uint8Array[]>;
  /** Records [from, from + count) of its tree of `treeSize` leaves, as the bytes it hashed. */
  records(from: number, count: number, treeSize: number): Promise<Uint8Array[]>;
}

export interface LogMirrorOptions {
  readonly source: LogSource;
  readonly store: MirrorStore;
  /** The source log's key, pinned by whoever runs the mirror. */
  readonly logKey: NoteKey;
  readonly hasher: MerkleHasher;
  /** Records written per transaction. */
  readonly batch?: number;
  /**
   * The DIDs whose moderation (and revocation of others' entries) this mirror accepts; undefined
   * to accept any signer the source logged, as the source's signed checkpoint vouches for it.
   */
  readonly moderators?: readonly string[];
  /** Stops a catch-up between batches (MirrorStoppedError); a batch being written is committed first. */
  readonly signal?: AbortSignal;
}

/** One catch-up: the records mirrored, [from, to), and the source's checkpoint they reach. */
export interface MirrorStep {
  readonly from: number;
  readonly to: number;
  readonly checkpoint: VerifiedCheckpoint;
}

export interface LogMirror {
  /**
   * Brings this database up to the source's latest checkpoint. Throws MirrorRefusedError, having
   * written nothing unproved, when the source's checkpoint, history or records do not verify, and
   * MirrorStoppedError when stopped; either way, every batch written stays, proved.
   */
  catchUp(): Promise<MirrorStep>;
}

/**
 * Follows another registry's transparency log into this database (docs/feed.md, "Mirroring").
 * Nothing is taken on the source's word:
 *  - every checkpoint must be signed by the pinned key, and extend the last one this database
 *    holds (a consistency proof), or the source has shown two histories;
 *  - every record must carry valid signatures and a valid entry, and fold onto its name's history
 *    by the rules (history-fold.ts), stating the outcome the rules give (record-events.ts);
 *  - each batch is written only once its records, appended to this database's tree, give a tree
 *    that the source's checkpoint extends (a consistency proof from the batch's end to the
 *    checkpoint; at the checkpoint itself, the same root).
 * So the mirror's log is, record for record and byte for byte, a prefix of the source's.
 */
export function createLogMirror(options: LogMirrorOptions): LogMirror {
  const { source, store, logKey, hasher } = options;
  const batch = options.batch ?? DEFAULT_MIRROR_SETTINGS.batch;
  const signal = options.signal;
  const moderators = options.moderators;
  // Without a pinned list the source's signed log vouches for its moderators (docs/operations.md).
  const foldOptions: FoldOptions = { isModerator: (did) => moderators === undefined || moderators.includes(did) };

  async function latestCheckpoint(): Promise<VerifiedCheckpoint> {
    try {
      return await verifyCheckpoint(await source.checkpoint(), logKey);
    } catch (error) {
      if (error instanceof LogVerificationError) throw new MirrorRefusedError(`${source.url}: ${error.message}`);
      throw error;
    }
  }

  /** The checkpoint this database last took from the source, which must be one of the pinned log's. */
  async function heldCheckpoint(position: MirrorPosition): Promise<VerifiedCheckpoint | undefined> {
    if (position.logSize !== position.tree.size) {
      throw new MirrorRefusedError(
        `this database's log has ${position.logSize} records but its tree ${position.tree.size}: it is not a mirror`,
      );
    }
    if (position.logSize === 0) return undefined;
    if (position.checkpointNote === undefined) {
      // A first catch-up stopped before its last batch: its batches were proved as they were
      // written, and the next batch's proof covers them again (it is over the whole tree).
      if (position.sourceKey !== undefined && sameKey(position.sourceKey, logKey)) return undefined;
      throw new MirrorRefusedError("this database has a log but no checkpoint: it is not a mirror");
    }
    try {
      return await verifyCheckpoint(position.checkpointNote, logKey);
    } catch {
      throw new MirrorRefusedError(`this database holds another log than ${logKey.name}: its checkpoint is not signed by the pinned key`);
    }
  }

  async function checkExtends(held: VerifiedCheckpoint, latest: VerifiedCheckpoint): Promise<void> {
    if (latest.treeSize < held.treeSize) {
      throw new MirrorRefusedError(
        `${source.url} shows a tree of ${latest.treeSize} records, smaller than the ${held.treeSize} it signed before`,
      );
    }
    if (latest.treeSize === held.treeSize) {
      if (!hashesEqual(latest.rootHash, held.rootHash))
        throw new MirrorRefusedError(`${source.url} signed two different trees of ${held.treeSize} records`);
      return;
    }
    try {
      verifyCheckpointsConsistent(held, latest, await source.consistencyProof(held.treeSize, latest.treeSize));
    } catch (error) {
      if (error instanceof LogVerificationError) throw new MirrorRefusedError(`${source.url}: ${error.message}`);
      throw error;
    }
  }

  async function appendBatch(from: number, count: number, latest: VerifiedCheckpoint): Promise<void> {
    const records = await source.records(from, count, latest.treeSize);
    if (records.length !== count) throw new MirrorRefusedError(`${source.url} served ${records.length} records for ${count}`);
    const checked = await Promise.all(records.map((bytes, i) => checkedRecord(bytes, from + i)));
    const changes = await foldedChanges(checked, store, foldOptions);
    const end = from + count;
    const proof = end < latest.treeSize ? await source.consistencyProof(end, latest.treeSize) : [];
    await store.append({
      changes,
      checkpointNote: end === latest.treeSize ? latest.note : undefined,
      async extend(tree) {
        if (tree.head.size !== from)
          throw new MirrorRefusedError(`this database's log moved while mirroring (${tree.head.size} records, expected ${from})`);
        const appended = await appendLeaves(
          from,
          records.map((bytes) => hasher.leafHash(bytes)),
          tree,
          hasher,
        );
        const proved =
          end === latest.treeSize
            ? hashesEqual(appended.root, latest.rootHash)
            : verifyConsistency(end, latest.treeSize, appended.root, latest.rootHash, proof, hasher);
        if (!proved) {
          throw new MirrorRefusedError(
            `records [${from}, ${end}) from ${source.url} are not the ones its checkpoint of ${latest.treeSize} records commits to`,
          );
        }
        return { storedHashes: appended.storedHashes, head: { size: appended.size, root: appended.root } };
      },
    });
  }

  return {
    async catchUp() {
      const position = await store.position();
      const held = await heldCheckpoint(position);
      const latest = await latestCheckpoint();
      if (held !== undefined) await checkExtends(held, latest);
      if (position.tree.size > latest.treeSize) {
        throw new MirrorRefusedError(`this database holds ${position.tree.size} records, more than ${source.url}'s ${latest.treeSize}`);
      }
      if (position.tree.size === latest.treeSize && !hashesEqual(position.tree.root, latest.rootHash)) {
        throw new MirrorRefusedError(`this database's tree of ${latest.treeSize} records is not ${source.url}'s`);
      }
      for (let from = position.tree.size; from < latest.treeSize; from += batch) {
        const stopped = () => new MirrorStoppedError(`stopped at ${from} records of ${source.url}'s ${latest.treeSize}`);
        if (signal?.aborted) throw stopped();
        await appendBatch(from, Math.min(batch, latest.treeSize - from), latest).catch((error: unknown) => {
          throw error instanceof MirrorStoppedError ? stopped() : error;
        });
      }
      return { from: position.tree.size, to: latest.treeSize, checkpoint: latest };
    },
  };
}

/** Whether a verifier key's text names the pinned key; text that is no key names none. */
function sameKey(verifierKey: string, pinned: NoteKey): boolean {
  try {
    const key = parseLogKey(verifierKey);
    return key.name === pinned.name && hashesEqual(key.publicKey, pinned.publicKey);
  } catch {
    return false;
  }
}

/** A record whose signatures verified, with its entry checked by this registry's rules when it has one. */
interface CheckedRecord {
  readonly index: number;
  readonly bytes: Uint8Array;
  readonly record: LogRecord;
  readonly entry?: ValidEntry;
}

/** A record checked as its source's registry checked it when it was written: everything but its place in its name's history. */
async function checkedRecord(bytes: Uint8Array, index: number): Promise<CheckedRecord> {
  return refusing(index, async () => {
    const record = parseLogRecord(bytes);
    if (record.index !== String(index)) throw new LogVerificationError(`record ${index} says it is record ${record.index}`);
    await verifyRecordSignatures(record);
    const entry = record.entry;
    if (entry === undefined) return { index, bytes, record };
    const valid = validateEntry(
      Object.fromEntries(PUBLISHER_FIELDS.map((field) => [field.name, entry[field.name]])),
      // The source's types are its own choice; its clock at the time is the record's.
      { entryTypes: [String(entry.entryType)], now: new Date(record.loggedAt) },
    );
    return { index, bytes, record, entry: valid };
  });
}

/**
 * The batch's records folded in log order onto their names' histories as this database holds
 * them (each name's stored records folded again: the database is the source's copy, written only
 * by this mirror), each refused when the rules refuse it or it states another outcome.
 */
async function foldedChanges(records: readonly CheckedRecord[], store: MirrorStore, options: FoldOptions): Promise<MirroredChange[]> {
  const names = records.map((checked) => refusing(checked.index, () => recordName(checked.record)));
  const stored = await store.recordsAbout([...new Set(names)]);
  const histories = new Map<string, NameHistory>();
  const historyOf = (name: string) =>
    histories.get(name) ??
    refusing(-1, () => {
      try {
        return foldRecords(name, (stored.get(name) ?? []).map(parseLogRecord), options);
      } catch (error) {
        if (error instanceof LogVerificationError)
          throw new MirrorRefusedError(`this database's own records of ${name} do not fold: ${error.message}`);
        throw error;
      }
    });
  return records.map((checked, i) =>
    refusing(checked.index, () => {
      const name = names[i]!;
      const step = foldRecord(historyOf(name), checked.record, options);
      histories.set(name, step.history);
      return mirroredChange(checked, name, step.history, step.changed);
    }),
  );
}

/** A folded record in the shape this database keeps it. */
function mirroredChange(checked: CheckedRecord, name: string, history: NameHistory, changed: readonly string[]): MirroredChange {
  const { index, bytes, record, entry } = checked;
  const common = { index, bytes, latestVersion: String(record.latestVersion), loggedAt: new Date(record.loggedAt) };
  if (entry === undefined) {
    const isNameAction = record.request?.action === "archive" || record.request?.action === "unarchive";
    return {
      ...common,
      kind: record.kind as MirroredAction["kind"],
      baseDid: name,
      request: record.request ?? {},
      versions: changed.map((version) => ({ entryDid: `${name}@${version}`, marks: versionMarks(history.versions.get(version)!) })),
      ...(isNameAction ? { archive: markJson(history.archive) } : {}),
    };
  }
  const logged = record.entry!;
  return {
    ...common,
    kind: record.kind as MirroredEntryChange["kind"],
    entry,
    state: {
      sequence: BigInt(logged.sequence),
      status: statusOf(history.versions.get(String(logged.version))!),
      revokedAt: logged.revokedAt == null ? null : new Date(logged.revokedAt),
      revocationReason: logged.revocationReason ?? null,
    },
    ...(record.revocation == null ? {} : { revocation: record.revocation }),
  };
}

/** The errors of reading one record as the mirror's refusal naming it; -1 when no record is to blame. */
function refusing<T>(index: number, read: () => T): T {
  const refusal = (error: unknown): never => {
    if (error instanceof LogVerificationError) throw new MirrorRefusedError(error.message);
    if (error instanceof InvalidArgumentError)
      throw new MirrorRefusedError(`record ${index} holds an entry this registry would refuse: ${error.message}`);
    if (error instanceof SyntaxError || error instanceof RangeError || error instanceof TypeError) {
      throw new MirrorRefusedError(`record ${index} is malformed: ${error.message}`);
    }
    throw error;
  };
  try {
    const result = read();
    return (result instanceof Promise ? result.catch(refusal) : result) as T;
  } catch (error) {
    return refusal(error);
  }
}
