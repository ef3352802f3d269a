import type { DescField } from "@bufbuild/protobuf";
import { LIFECYCLE_ACTIONS, MODERATION_ACTIONS, MODERATION_POLICIES } from "../../domain/action-payloads.js";
import { ENTRY_PAYLOAD_TYPES } from "../../domain/entry-fields.js";
import { VERSION_STATUSES } from "../../domain/version-state.js";

/**
 * The string fields whose values are a fixed set, by the field's full proto name, with the set the
 * domain declares. Strings on the wire (a proto enum would change the JSON and binary forms), they
 * are enums in the OpenAPI document.
 */
export const FIELD_VALUES: Readonly<Record<string, readonly string[]>> = {
  "registry.v1.Entry.status": VERSION_STATUSES,
  "registry.v1.EntryVersion.status": VERSION_STATUSES,
  "registry.v1.Entry.payload_type": ENTRY_PAYLOAD_TYPES,
  "registry.v1.Moderation.policy": MODERATION_POLICIES,
  "registry.v1.ChangeLifecycleRequest.action": LIFECYCLE_ACTIONS,
  "registry.v1.ModerateEntryRequest.action": MODERATION_ACTIONS,
  "registry.v1.ModerateEntryRequest.policy": MODERATION_POLICIES,
};

/** The fixed values of a string field, if it has them. */
export function fieldValues(field: DescField): readonly string[] | undefined {
  return FIELD_VALUES[`${field.parent.typeName}.${field.name}`];
}
