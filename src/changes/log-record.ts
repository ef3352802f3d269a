import canonicalize from "canonicalize";
import { MESSAGE_FIELDS } from "../domain/entry-fields.js";
import type { StoredEntry } from "../entries/entry-repository.js";
import type { LoggedChange } from "./change-log.js";

/**
 * The bytes a change enters the transparency log's tree as (docs/transparency.md): the RFC 8785
 * (JCS) canonical JSON of the change, in the Change message's JSON names, every field of its
 * kind present (absent values as null), int64s as decimal strings and times as RFC 3339 with
 * milliseconds. A create or revocation has `entry` and `revocation`; a lifecycle or moderation
 * request has `entries` and `request`.
 *
 * They are computed once, when the change is integrated into the tree, and stored: a later
 * version of this function (a new entry field, say) changes the bytes of later records only, and
 * verifiers hash the bytes the log serves rather than rebuilding them.
 */
export function logRecordBytes(change: LoggedChange): Uint8Array {
  const record =
    "entries" in change
      ? {
          index: change.index.toString(),
          kind: change.kind,
          entries: change.entries.map(entryJson),
          latestVersion: change.latestVersion,
          request: change.request,
          loggedAt: change.loggedAt.toISOString(),
        }
      : {
          index: change.index.toString(),
          kind: change.kind,
          entry: entryJson(change.entry),
          latestVersion: change.latestVersion,
          revocation: change.revocation ?? null,
          loggedAt: change.loggedAt.toISOString(),
        };
  const text = canonicalize(record);
  if (text === undefined) throw new TypeError("a log record cannot be canonicalized");
  return new TextEncoder().encode(text);
}

function entryJson(entry: StoredEntry): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const field of MESSAGE_FIELDS) {
    const value: unknown = entry[field.name as keyof StoredEntry];
    json[field.name] = value instanceof Date ? value.toISOString() : typeof value === "bigint" ? value.toString() : value;
  }
  return json;
}
