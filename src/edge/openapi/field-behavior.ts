import { getOption, type DescField } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { field_behavior, FieldBehavior } from "../../../gen/google/api/field_behavior_pb.js";
import { JSON_WRITE } from "../rpc/reused-encodings.js";

/**
 * What the protos' google.api.field_behavior annotations and the server's JSON writer say about a
 * field, as the OpenAPI document needs it: which fields a request must set, which the server
 * alone sets, and which every answer carries.
 */

/** A request must set it: REQUIRED. */
export function isRequiredInRequests(field: DescField): boolean {
  return getOption(field, field_behavior).includes(FieldBehavior.REQUIRED);
}

/** The server sets it, and a request leaves it out: OUTPUT_ONLY. */
export function isOutputOnly(field: DescField): boolean {
  return getOption(field, field_behavior).includes(FieldBehavior.OUTPUT_ONLY);
}

/**
 * Every JSON answer carries it: the server writes fields of implicit presence (singular scalars
 * without `optional`, lists, maps) even at their defaults; a message field, a proto3 `optional`
 * field or a oneof member appears only when set.
 */
export function isAlwaysAnswered(field: DescField): boolean {
  return JSON_WRITE.alwaysEmitImplicit && field.presence === FeatureSet_FieldPresence.IMPLICIT;
}
