import { toJson } from "@bufbuild/protobuf";
import canonicalize from "canonicalize";
import { type Entry, EntrySchema } from "../../gen/registry/v1/entry_pb.js";
import { fieldSpec, MESSAGE_FIELDS } from "../domain/entry-fields.js";
import type { VerifiedHistoryRecord } from "./history-verifier.js";
import type { NameHistory } from "../domain/history-fold.js";
import { recordEntries } from "./log-verifier.js";
import { stateMismatch } from "./record-events.js";

/** A member where what the registry serves and what its log holds differ. */
export interface ServedMismatch {
  /** The Entry member's JSON name. */
  readonly field: string;
  readonly served: unknown;
  /** Undefined when the log holds no record of the version served. */
  readonly logged: unknown;
}

/** What a record written before a field existed means by leaving it out: a text's `absentAs` (payloadType's v1), false, or nothing. */
const ABSENT_FROM_OLDER_RECORDS: Readonly<Record<string, unknown>> = Object.freeze(
  Object.fromEntries(
    MESSAGE_FIELDS.map((field) => [
      field.name,
      field.kind === "boolean" ? false : field.kind === "text" ? (fieldSpec(field).absentAs ?? "") : null,
    ]),
  ),
);

const TIME_FIELDS: ReadonlySet<string> = new Set(MESSAGE_FIELDS.filter((field) => field.kind === "time").map((field) => field.name));

/**
 * Compares the entry a registry serves with the state its verified history gives: every member of
 * the newest record of that version, and `isLatest` from the name's newest record's
 * `latestVersion`. `history` is the bare name's, oldest first. Returns the first member that
 * differs, or undefined when every member agrees.
 */
export function servedEntryMismatch(served: Entry, history: readonly VerifiedHistoryRecord[]): ServedMismatch | undefined {
  const servedJson = toJson(EntrySchema, served, { alwaysEmitImplicit: true }) as Record<string, unknown>;
  const own = history
    .map((record) => recordEntries(record.record).find((entry) => entry.entryDid === served.entryDid))
    .findLast((entry) => entry !== undefined);
  if (own === undefined) return { field: "entryDid", served: served.entryDid, logged: undefined };
  const latest = history.map((record) => record.record.latestVersion).findLast((version) => typeof version === "string");
  const logged: Record<string, unknown> = { ...ABSENT_FROM_OLDER_RECORDS, ...own, isLatest: latest === own.version };
  for (const field of new Set([...Object.keys(logged), ...Object.keys(servedJson)])) {
    if (comparable(field, servedJson[field]) !== comparable(field, logged[field]))
      return { field, served: servedJson[field], logged: logged[field] };
  }
  return undefined;
}

/** One text per value as both sides may spell it: absent, null and empty alike; times by instant; JSON by its canonical form. */
function comparable(field: string, value: unknown): string {
  if (value === undefined || value === null || value === "") return "";
  if (Array.isArray(value) && value.length === 0) return "";
  if (typeof value === "object" && Object.keys(value as object).length === 0) return "";
  if (TIME_FIELDS.has(field) && typeof value === "string" && !Number.isNaN(Date.parse(value))) return String(Date.parse(value));
  return canonicalize(value) ?? "";
}

/**
 * Compares the entry a registry serves with the fold of its name's records (record-events.ts):
 * its status, each mark of section 11, the fields a removal withholds, and `isLatest`. Returns the
 * first member that differs, or undefined.
 */
export function servedStateMismatch(served: Entry, history: NameHistory): ServedMismatch | undefined {
  const servedJson = toJson(EntrySchema, served, { alwaysEmitImplicit: true }) as Record<string, unknown>;
  const state = history.versions.get(served.version);
  if (state === undefined) return { field: "entryDid", served: served.entryDid, logged: undefined };
  const mismatch = stateMismatch(servedJson, state, history.archive);
  if (mismatch !== undefined) return { field: mismatch.field, served: mismatch.stated, logged: mismatch.folded };
  const isLatest = history.latest === served.version;
  return served.isLatest === isLatest ? undefined : { field: "isLatest", served: served.isLatest, logged: isLatest };
}
