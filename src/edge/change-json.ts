import { MESSAGE_FIELDS } from "../domain/entry-fields.js";
import type { Change } from "../../gen/registry/v1/change_feed_service_pb.js";
import type { Message } from "@bufbuild/protobuf";
import type { Entry } from "../../gen/registry/v1/entry_pb.js";

/**
 * A Change message's JSON exactly as protobuf-es writes it with every implicit field (the encoding
 * REST and Connect JSON answer with), without reflection: a replay renders thousands of changes
 * per page, and reflective toJson was the largest part of its CPU. The key order is the messages'
 * field order; test/edge/change-json.test.ts holds the two byte for byte.
 */
export function changeJson(change: Change): string {
  const json: Record<string, unknown> = {
    index: change.index.toString(),
    kind: change.kind,
    ...(change.entry === undefined ? {} : { entry: entryJson(change.entry) }),
    latestVersion: change.latestVersion,
  };
  const revocation = change.revocation;
  if (revocation !== undefined)
    json.revocation = { did: revocation.did, reason: revocation.reason, signature: revocation.signature, signer: revocation.signer };
  json.loggedAt = change.loggedAt;
  json.entries = change.entries.map(entryJson);
  if (change.request !== undefined) json.request = change.request;
  return JSON.stringify(json);
}

/** The Entry message's JSON members, by the catalogue: unset optional fields are left out, int64s are text. */
function entryJson(entry: Entry): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const field of MESSAGE_FIELDS) {
    const value: unknown = entry[field.name as keyof Entry];
    if (value === undefined) continue;
    json[field.name] = typeof value === "bigint" ? value.toString() : field.kind === "mark" ? markJson(value as Message) : value;
  }
  return json;
}

/** A mark's members in field order, without the message's type name. */
function markJson({ $typeName: _, ...members }: Message): Record<string, unknown> {
  return members;
}
