import canonicalize from "canonicalize";
import { MODERATION_PAYLOAD_TYPE } from "../domain/action-payloads.js";
import { validateLifecycleRequest, validateModerationRequest } from "../domain/action-rules.js";
import { parseEntryDid } from "../domain/entry-did.js";
import type { MarkValue } from "../domain/entry-fields.js";
import { emptyHistory, type FoldOptions, foldEvent, type NameEvent, type NameHistory } from "../domain/history-fold.js";
import { statusOf, storedMark, type Archive, type VersionState, WITHHELD_VALUES } from "../domain/version-state.js";
import { InvalidArgumentError } from "../errors.js";
import { LogVerificationError, type LogRecord, recordEntries } from "./log-verifier.js";

/**
 * Log records read as the events of src/domain/history-fold.ts, and each record's stated outcome
 * (its `entries` and `latestVersion`) checked against the fold (docs/lifecycle.md, "Records"): the
 * one reading `registry mirror` and `registry verify` share. Browser-safe, as the SDK's verifier is.
 * Records are expected to have passed verifyRecordSignatures; every failure is a LogVerificationError.
 */

/** The marks an action sets, by action: the member its `at` is read from in the record's entries. */
const MARK_SET_BY: Readonly<Record<string, MarkMember>> = Object.freeze({
  deprecate: "deprecation",
  yank: "yank",
  archive: "archive",
  quarantine: "quarantine",
  remove: "removal",
});

type MarkMember = "deprecation" | "yank" | "quarantine" | "removal" | "archive";
const VERSION_MARKS = ["deprecation", "yank", "quarantine", "removal"] as const;

/** A record as an event about its name (the bare DID). */
export function recordEvent(record: LogRecord): { readonly name: string; readonly event: NameEvent } {
  try {
    return record.request === undefined ? entryEvent(record) : requestEvent(record, record.request);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw refused(record, `its request breaks the rules: ${error.message}`);
    throw error;
  }
}

/** One record folded onto its name's history, refused when the rules refuse it or it states another outcome. */
export function foldRecord(
  history: NameHistory,
  record: LogRecord,
  options: FoldOptions,
): { readonly history: NameHistory; readonly changed: readonly string[] } {
  const { name, event } = recordEvent(record);
  if (name !== history.name) throw refused(record, `it is about ${name}, not ${history.name}`);
  const step = foldEvent(history, event, options);
  if ("refusal" in step) throw refused(record, `${step.refusal.rule}: ${step.refusal.message.replace(/^event \d+: /, "")}`);
  checkStatedOutcome(record, step.history, step.changed);
  return step;
}

/** A name's records, oldest first, folded from nothing. */
export function foldRecords(name: string, records: Iterable<LogRecord>, options: FoldOptions): NameHistory {
  let history = emptyHistory(name);
  for (const record of records) history = foldRecord(history, record, options).history;
  return history;
}

/** The bare DID a record is about. */
export function recordName(record: LogRecord): string {
  return recordEvent(record).name;
}

/** A member where a stated entry and the folded state differ. */
export interface StateMismatch {
  readonly field: string;
  readonly stated: unknown;
  readonly folded: unknown;
}

/**
 * Compares an entry as JSON (a record's, or one served) with a version's folded state: its status,
 * each mark of section 11, the revocation, the two booleans, and the fields a removal withholds.
 */
export function stateMismatch(
  entry: Readonly<Record<string, unknown>>,
  state: VersionState,
  archive: Archive | undefined,
): StateMismatch | undefined {
  const folded: Record<string, unknown> = {
    status: statusOf(state),
    ...Object.fromEntries(VERSION_MARKS.map((member) => [member, markJson(state[member])])),
    archive: markJson(archive),
    revokedAt: state.revocation?.revokedAt.toISOString() ?? null,
    revocationReason: state.revocation?.revocationReason ?? null,
    deprecated: state.deprecation !== undefined,
    archived: archive !== undefined,
    ...(state.removal === undefined ? {} : WITHHELD_VALUES),
  };
  for (const [field, value] of Object.entries(folded)) {
    if (comparable(entry[field]) !== comparable(value)) return { field, stated: entry[field] ?? null, folded: value };
  }
  return undefined;
}

/** A mark as stored and served: its members as text, `at` as `toISOString()` writes it; null when absent. */
export function markJson(mark: { readonly at: Date } | undefined): MarkValue | null {
  return mark === undefined ? null : storedMark(mark);
}

/** A version's marks as the columns that hold them. */
export function versionMarks(state: VersionState): Readonly<Record<(typeof VERSION_MARKS)[number], MarkValue | null>> {
  return Object.freeze(Object.fromEntries(VERSION_MARKS.map((member) => [member, markJson(state[member])])) as never);
}

function entryEvent(record: LogRecord): { readonly name: string; readonly event: NameEvent } {
  const entry = record.entry ?? {};
  const { name, version } = addressed(record, String(entry.entryDid));
  if (version === undefined) throw refused(record, "its entry has no version");
  if (record.kind === "entry.created") {
    return { name, event: { kind: "created", version, by: String(entry.publisherDid), at: timeOf(record, record.loggedAt) } };
  }
  // Revocations from before the log kept no signer: the fold then asks no authority.
  const by = record.revocation?.signer || undefined;
  const at = timeOf(record, entry.revokedAt);
  return {
    name,
    event: { kind: "revoked", version, reason: String(entry.revocationReason ?? ""), at, ...(by === undefined ? {} : { by }) },
  };
}

function requestEvent(record: LogRecord, request: Readonly<Record<string, string>>): { readonly name: string; readonly event: NameEvent } {
  const { name, version } = addressed(record, String(request.subject));
  const at = actedAt(record, request.action);
  const fields = { did: request.subject, action: request.action, issuedAt: request.issuedAt };
  const by = String(request.by);
  const about = version === undefined ? {} : { version };
  if (request.payloadType === MODERATION_PAYLOAD_TYPE) {
    const valid = validateModerationRequest({ ...fields, policy: request.policy, note: request.note }, { now: at });
    const { action, policy, note, issuedAt } = valid;
    return { name, event: { kind: "moderation", ...about, action, policy, note, by, issuedAt, at } as NameEvent };
  }
  const valid = validateLifecycleRequest({ ...fields, reason: request.reason, replacement: request.replacement }, { now: at });
  const { action, reason, replacement, issuedAt } = valid;
  return { name, event: { kind: "lifecycle", ...about, action, reason, replacement, by, issuedAt, at } };
}

function addressed(record: LogRecord, did: string): { readonly name: string; readonly version?: string } {
  const parsed = parseEntryDid(did);
  if ("error" in parsed) throw refused(record, `it addresses ${JSON.stringify(did)}, which ${parsed.error}`);
  return parsed.version === undefined ? { name: parsed.baseDid } : { name: parsed.baseDid, version: parsed.version.version };
}

/**
 * When the registry accepted a request: the `at` of the mark it set, which the log holds only in
 * the record's entries (the loggedAt is the database's later clock); an undo sets none, so loggedAt.
 * The request's own rules then hold `issuedAt` within 5 minutes of it.
 */
function actedAt(record: LogRecord, action: string | undefined): Date {
  const member = MARK_SET_BY[String(action)];
  const mark = member === undefined ? undefined : recordEntries(record).find((entry) => entry[member] != null)?.[member];
  return timeOf(record, mark === undefined ? record.loggedAt : mark.at);
}

/** A time the record holds, which must be written as `toISOString()` writes it, so it has one form. */
function timeOf(record: LogRecord, text: unknown): Date {
  const time = new Date(typeof text === "string" ? text : Number.NaN);
  if (Number.isNaN(time.getTime()) || time.toISOString() !== text) throw refused(record, `it holds ${JSON.stringify(text)} for a time`);
  return time;
}

/**
 * The record's entries must be exactly the versions the event changed, each in its folded state;
 * a request's record must also name the folded latest version, and mark it so on its entries.
 */
function checkStatedOutcome(record: LogRecord, history: NameHistory, changed: readonly string[]): void {
  const stated = recordEntries(record);
  const dids = stated.map((entry) => String(entry.entryDid));
  const expected = changed.map((version) => `${history.name}@${version}`);
  if (new Set(dids).size !== dids.length || dids.length !== expected.length || !expected.every((did) => dids.includes(did))) {
    throw refused(record, `its entries are ${dids.join(", ") || "none"}, but it changed ${expected.join(", ")}`);
  }
  for (const entry of stated) {
    const version = String(entry.version);
    const state = history.versions.get(version);
    if (state === undefined || `${history.name}@${version}` !== entry.entryDid)
      throw refused(record, `${entry.entryDid} says version ${version}`);
    const mismatch = stateMismatch(entry, state, history.archive);
    if (mismatch !== undefined) {
      throw refused(
        record,
        `it says ${entry.entryDid} has ${mismatch.field} ${JSON.stringify(mismatch.stated)}, but the rules give ${JSON.stringify(mismatch.folded)}`,
      );
    }
  }
  if (record.request === undefined) return;
  const latest = history.latest ?? "";
  if (record.latestVersion !== latest)
    throw refused(record, `it says latest is ${JSON.stringify(record.latestVersion)}, but the rules give ${JSON.stringify(latest)}`);
  const marked = stated.find((entry) => (entry.isLatest === true) !== (entry.version === latest));
  if (marked !== undefined)
    throw refused(record, `it says ${marked.entryDid} has isLatest ${String(marked.isLatest)}, but latest is ${JSON.stringify(latest)}`);
}

/** One text per value as both sides may spell it: absent, null, empty and false alike; times and marks by instant. */
function comparable(value: unknown): string {
  if (value === undefined || value === null || value === "" || value === false) return "";
  if (Array.isArray(value)) return value.length === 0 ? "" : (canonicalize(value) ?? "");
  if (typeof value === "object") {
    const members = Object.entries(value as object).filter(([, member]) => member !== "" && member !== undefined && member !== null);
    if (members.length === 0) return "";
    return canonicalize(Object.fromEntries(members.map(([key, member]) => [key, key === "at" ? instant(member) : member]))) ?? "";
  }
  if (typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value)) return instant(value);
  return canonicalize(value) ?? "";
}

function instant(value: unknown): string {
  const time = typeof value === "string" ? Date.parse(value) : Number.NaN;
  return Number.isNaN(time) ? String(value) : new Date(time).toISOString();
}

function refused(record: LogRecord, why: string): LogVerificationError {
  return new LogVerificationError(`record ${record.index} (${record.kind}): ${why}`);
}
