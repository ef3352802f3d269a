import { sha256 } from "@noble/hashes/sha2.js";
import canonicalize from "canonicalize";
import { ed25519KeyFromDid } from "../domain/did-key.js";
import { ENTRY_FIELDS, fieldSpec } from "../domain/entry-fields.js";
import type { EntrySigningFields } from "../domain/signing-payload.js";
import { parseCheckpoint } from "../transparency/checkpoint.js";
import { createMerkleHasher, type Sha256 } from "../transparency/merkle.js";
import { openNote, parseVerifierKey, type NoteKey } from "../transparency/signed-note.js";
import { verifyConsistency, verifyInclusion } from "../transparency/verify.js";
import { decodeSignature, verifyEd25519, verifyEntrySignature, verifyRevocationSignature } from "./signing.js";

/**
 * Verifiers of the registry's transparency log (docs/transparency.md), for Node and browsers:
 * SHA-256 from @noble/hashes, Ed25519 with the registry's own rule (signing.ts).
 */

const browserSha256: Sha256 = (bytes) => sha256(bytes);
const hasher = createMerkleHasher(browserSha256);

export class LogVerificationError extends Error {}

/** A checkpoint whose signature by the pinned log key verified. */
export interface VerifiedCheckpoint {
  readonly origin: string;
  readonly treeSize: number;
  readonly rootHash: Uint8Array;
  /** The signed note as received, to keep as evidence or to compare with others. */
  readonly note: string;
}

/** The log's key from its verifier key text (`<origin>+<key id>+<base64 key>`), as pinned by the caller. */
export function parseLogKey(verifierKey: string): NoteKey {
  try {
    return parseVerifierKey(verifierKey, browserSha256);
  } catch (error) {
    throw new LogVerificationError(`not a log verifier key: ${(error as Error).message}`);
  }
}

/** Opens a checkpoint note with the pinned key; refuses one not signed by it or not a checkpoint of its origin. */
export async function verifyCheckpoint(note: string, logKey: NoteKey): Promise<VerifiedCheckpoint> {
  let text: string;
  try {
    text = await openNote(note, logKey, (publicKey, message, signature) => verifyEd25519(signature, message, publicKey), browserSha256);
  } catch (error) {
    throw new LogVerificationError(`the checkpoint does not verify: ${(error as Error).message}`);
  }
  const checkpoint = parseCheckpoint(text);
  if (checkpoint.origin !== logKey.name) throw new LogVerificationError(`the checkpoint is of ${checkpoint.origin}, not ${logKey.name}`);
  return { origin: checkpoint.origin, treeSize: checkpoint.size, rootHash: checkpoint.rootHash, note };
}

/** The kinds of record a log holds (docs/transparency.md). */
export const RECORD_KINDS = Object.freeze(["entry.created", "entry.revoked", "entry.lifecycle", "entry.moderation"] as const);
export type RecordKind = (typeof RECORD_KINDS)[number];

/** The payload type a lifecycle or moderation record's request must carry. */
const REQUEST_PAYLOAD_TYPES: Readonly<Partial<Record<RecordKind, string>>> = Object.freeze({
  "entry.lifecycle": "registry.lifecycle.v1",
  "entry.moderation": "registry.moderation.v1",
});

/**
 * A record of the log, parsed from the canonical bytes the log hashed: a create or revocation has
 * `entry` (and `revocation`); a lifecycle or moderation request has `entries` and `request`.
 */
export interface LogRecord {
  readonly index: string;
  readonly kind: RecordKind;
  // biome-ignore lint/suspicious/noExplicitAny: the entry as the log holds it; the signature check and validateEntry vet the fields read
  readonly entry?: Record<string, any>;
  // biome-ignore lint/suspicious/noExplicitAny: as entry
  readonly entries?: readonly Record<string, any>[];
  readonly request?: Readonly<Record<string, string>>;
  readonly latestVersion: string;
  readonly revocation?: { did: string; reason: string; signature: string; signer: string } | null;
  readonly loggedAt: string;
}

/** The versions a record is about, each in its state right after the record. */
// biome-ignore lint/suspicious/noExplicitAny: as LogRecord.entry
export function recordEntries(record: LogRecord): readonly Record<string, any>[] {
  return record.entries ?? (record.entry === undefined ? [] : [record.entry]);
}

export interface EntryProof {
  readonly index: number | bigint;
  readonly record: Uint8Array;
  readonly proof: readonly Uint8Array[];
  readonly checkpoint: string;
  readonly treeSize: number | bigint;
}

/**
 * Checks an entry version's proof (GetEntryProof, or GET /v1/log/entries/{did}) end to end:
 *  1. the checkpoint is signed by the pinned log key;
 *  2. the record is in that checkpoint's tree at its index (RFC 9162 inclusion);
 *  3. the record is about `did`, at the index it claims;
 *  4. the publisher's signature over the entry verifies, and a revocation's signature too when the
 *     log kept it.
 * Returns the verified record and checkpoint; throws LogVerificationError naming the first failure.
 */
export async function verifyEntryProof(
  did: string,
  answer: EntryProof,
  logKey: NoteKey,
): Promise<{ record: LogRecord; checkpoint: VerifiedCheckpoint }> {
  const checkpoint = await verifyCheckpoint(answer.checkpoint, logKey);
  const index = Number(answer.index);
  if (Number(answer.treeSize) !== checkpoint.treeSize)
    throw new LogVerificationError("the proof is not against the checkpoint it came with");
  verifyRecordInclusion(answer.record, index, answer.proof, checkpoint);
  const record = parseLogRecord(answer.record);
  if (record.index !== String(index)) throw new LogVerificationError(`the record says index ${record.index}, not ${index}`);
  const about = recordEntries(record).map((entry) => entry.entryDid);
  if (!about.includes(did)) throw new LogVerificationError(`the record is about ${about.join(", ")}, not ${did}`);
  await verifyRecordSignatures(record);
  return { record, checkpoint };
}

/** Checks that `record` is leaf `index` of the checkpoint's tree (RFC 9162 inclusion); throws LogVerificationError if not. */
export function verifyRecordInclusion(
  record: Uint8Array,
  index: number,
  proof: readonly Uint8Array[],
  checkpoint: VerifiedCheckpoint,
): void {
  if (!verifyInclusion(hasher.leafHash(record), index, checkpoint.treeSize, proof, checkpoint.rootHash, hasher)) {
    throw new LogVerificationError(`record ${index} is not in the checkpoint's tree: its inclusion proof does not verify`);
  }
}

/** A record from the bytes the log hashed; throws LogVerificationError when they are not one. */
export function parseLogRecord(bytes: Uint8Array): LogRecord {
  let record: LogRecord;
  try {
    record = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as LogRecord;
  } catch (error) {
    throw new LogVerificationError(`a record is not JSON: ${(error as Error).message}`);
  }
  if (
    typeof record !== "object" ||
    record === null ||
    !(RECORD_KINDS as readonly string[]).includes(record.kind) ||
    !/^(0|[1-9]\d*)$/.test(String(record.index))
  ) {
    throw new LogVerificationError("a record lacks its index or kind");
  }
  const isObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);
  const shaped =
    REQUEST_PAYLOAD_TYPES[record.kind] === undefined
      ? isObject(record.entry)
      : Array.isArray(record.entries) && record.entries.every(isObject) && isObject(record.request);
  if (!shaped) throw new LogVerificationError(`record ${record.index} (${record.kind}) lacks its entry, or its entries and request`);
  return record;
}

/**
 * Checks the signatures a record carries: the publisher's over the entry, and the revocation's
 * when the log kept it (revocations made before the log existed have none).
 */
export async function verifyRecordSignatures(record: LogRecord): Promise<void> {
  if (record.request !== undefined) return verifyRequestSignature(record, record.request);
  const entry = record.entry ?? {};
  const signed = await verifyEntrySignature(signedFieldsOf(entry), entry.signature).catch(() => false);
  if (!signed) throw new LogVerificationError(`record ${record.index}: the publisher's signature over the entry does not verify`);
  const revocation = record.revocation;
  if (revocation != null && revocation.signature !== "") {
    if (!(await verifyRevocationSignature(revocation.did, revocation.reason, revocation.signature, revocation.signer).catch(() => false))) {
      throw new LogVerificationError(`record ${record.index}: the revocation's signature does not verify`);
    }
  }
}

/**
 * A lifecycle or moderation request kept as signed: its members but `signature` are the payload,
 * so the verifier rebuilds it without knowing each payload's members, and `by` names the key.
 * The states beside it are the registry's, checked against the request by folding the history.
 */
async function verifyRequestSignature(record: LogRecord, request: Readonly<Record<string, string>>): Promise<void> {
  const { signature, ...payload } = request;
  if (payload.payloadType !== REQUEST_PAYLOAD_TYPES[record.kind]) {
    throw new LogVerificationError(`record ${record.index}: a ${record.kind} record's request is of type ${String(payload.payloadType)}`);
  }
  const key = ed25519KeyFromDid(String(payload.by));
  const bytes = typeof signature === "string" ? decodeSignature(signature) : undefined;
  const canonical = canonicalize(payload);
  const verified =
    !("error" in key) && bytes instanceof Uint8Array && canonical !== undefined
      ? await verifyEd25519(bytes, new TextEncoder().encode(canonical), key).catch(() => false)
      : false;
  if (!verified) throw new LogVerificationError(`record ${record.index}: the ${record.kind} request's signature does not verify`);
}

/**
 * The signed fields of a logged entry, by the catalogue: records logged before a field existed
 * lack it, and a record that names no payload type was signed as v1.
 */
function signedFieldsOf(entry: Record<string, unknown>): EntrySigningFields {
  const fields: Record<string, unknown> = {};
  for (const field of SIGNED_FIELDS) fields[field.name] = entry[field.name] ?? undefined;
  return fields as unknown as EntrySigningFields;
}

const SIGNED_FIELDS = ENTRY_FIELDS.filter((field) => fieldSpec(field).signed === true);

/** Checks that a newer checkpoint extends an older one (RFC 9162 consistency); both must be verified already. */
export function verifyCheckpointsConsistent(older: VerifiedCheckpoint, newer: VerifiedCheckpoint, proof: readonly Uint8Array[]): void {
  if (!verifyConsistency(older.treeSize, newer.treeSize, older.rootHash, newer.rootHash, proof, hasher)) {
    throw new LogVerificationError(
      `the log's checkpoint of size ${newer.treeSize} does not extend the one of size ${older.treeSize}: it rewrote history`,
    );
  }
}
