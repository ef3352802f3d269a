import type { LoggedChange } from "../changes/change-log.js";
import { MESSAGE_FIELDS } from "../domain/entry-fields.js";
import type { StoredEntry } from "../entries/entry-repository.js";

/**
 * A change's JSON exactly as protobuf-es writes the Change message with every implicit field (the
 * encoding REST and Connect JSON answer with), made from the change directly. A replay renders
 * thousands of changes per page, and reflective toJson was the largest part of its CPU. The key
 * order is the messages' field order; test/edge/change-json.test.ts holds the two byte for byte.
 */
export function changeJson(change: LoggedChange): string {
  const json: Record<string, unknown> = {
    index: change.index.toString(),
    kind: change.kind,
    entry: entryJson(change.entry),
    latestVersion: change.latestVersion,
  };
  const revocation = change.revocation;
  if (revocation !== undefined) json.revocation = { did: revocation.did, reason: revocation.reason, signature: revocation.signature, signer: revocation.signer };
  json.loggedAt = change.loggedAt.toISOString();
  return JSON.stringify(json);
}

/** The Entry message's JSON members: absent (null) values are unset optional fields, which are left out. */
function entryJson(entry: StoredEntry): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const field of MESSAGE_FIELDS) {
    const value: unknown = entry[field.name as keyof StoredEntry];
    if (value === null) continue;
    json[field.name] = value instanceof Date ? value.toISOString() : typeof value === "bigint" ? value.toString() : value;
  }
  return json;
}
