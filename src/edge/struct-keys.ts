import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { formatFieldPath, PROTO_KEY, type FieldPath } from "../domain/json-input.js";

/**
 * Finds "__proto__" keys in requests before protobuf-es reads them. Its readers store map keys
 * (google.protobuf.Struct's among them) by assignment, `fields[key] = value`, and its Struct-to-JSON
 * conversion does the same; with the key "__proto__" that assignment replaces the object's
 * prototype instead of adding a key, so the key is gone, silently, before any rule or signature
 * check could see it. JSON.parse keeps it as an own property, and the wire bytes carry it as
 * sent, so these look there. Pure functions: paths come back as field names for errors, in JSON
 * names from the request's root, e.g. `entry.data.__proto__` or `conditions[0].value.__proto__`.
 */

/** The path of the first "__proto__" object key anywhere in a parsed JSON value, or undefined. */
export function findProtoKeyInJson(json: unknown): string | undefined {
  if (!hasProtoKey(json)) return undefined;
  // An explicit stack, and paths kept as links to the parent's: a hostile body may nest far deeper
  // than the call stack allows, and copying each path would cost the square of the depth.
  const pending: { value: unknown; at: PathLink | undefined }[] = [{ value: json, at: undefined }];
  while (pending.length > 0) {
    const { value, at } = pending.pop()!;
    if (typeof value !== "object" || value === null) continue;
    const children: { value: unknown; at: PathLink }[] = [];
    if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) children.push({ value: item, at: { parent: at, segment: index } });
    } else {
      for (const key of Object.keys(value)) {
        if (key === PROTO_KEY) return formatFieldPath("", pathOf({ parent: at, segment: key }));
        children.push({ value: (value as Record<string, unknown>)[key], at: { parent: at, segment: key } });
      }
    }
    for (let index = children.length - 1; index >= 0; index--) pending.push(children[index]!);
  }
  return undefined;
}

/**
 * Whether any object in a parsed JSON value has a "__proto__" key: the same walk as above without
 * building paths, so the common body (none) costs no allocation per value.
 */
function hasProtoKey(json: unknown): boolean {
  const pending: unknown[] = [json];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== "object" || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) if (typeof item === "object" && item !== null) pending.push(item);
      continue;
    }
    for (const key in value) {
      if (key === PROTO_KEY) return true;
      const child = (value as Record<string, unknown>)[key];
      if (typeof child === "object" && child !== null) pending.push(child);
    }
  }
  return false;
}

interface PathLink {
  readonly parent: PathLink | undefined;
  readonly segment: string | number;
}

function pathOf(link: PathLink | undefined): FieldPath {
  const path: (string | number)[] = [];
  for (let at = link; at !== undefined; at = at.parent) path.push(at.segment);
  return path.reverse();
}

/** protobuf-es's own limit on message nesting; deeper bodies fail to decode anyway. */
const MAX_NESTING = 100;

const PROTO_KEY_BYTES = new TextEncoder().encode(PROTO_KEY);
const keyText = new TextDecoder();

interface PendingMessage {
  readonly desc: DescMessage;
  readonly bytes: Uint8Array;
  readonly at: PathLink | undefined;
  readonly depth: number;
}

/**
 * The path of the first "__proto__" key of a string-keyed map (google.protobuf.Struct's fields,
 * at any depth of Value, ListValue and Struct) in the protobuf wire bytes of a `schema` message,
 * or undefined. Only fields that can lead to such a map are decoded; everything else is skipped.
 * Bytes that are not a valid message give undefined, leaving the refusal to the decoder.
 */
export function findProtoKeyInWire(schema: DescMessage, bytes: Uint8Array): string | undefined {
  // Protobuf stores strings as their raw UTF-8 bytes, so a "__proto__" key is in the body
  // verbatim: a body without those bytes (nearly every one) needs no decoding to be cleared.
  if (!containsBytes(bytes, PROTO_KEY_BYTES)) return undefined;
  try {
    const pending: PendingMessage[] = [{ desc: schema, bytes, at: undefined, depth: 1 }];
    while (pending.length > 0) {
      const message = pending.pop()!;
      const found = scanMessage(message, pending);
      if (found !== undefined) return formatFieldPath("", pathOf(found));
    }
    return undefined;
  } catch {
    return undefined;
  }
}

function containsBytes(haystack: Uint8Array, needle: Uint8Array): boolean {
  return Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength).indexOf(needle) >= 0;
}

/** Reads one message's fields: returns the path of a "__proto__" map key, or queues the nested messages that may hold one. */
function scanMessage(message: PendingMessage, pending: PendingMessage[]): PathLink | undefined {
  if (message.depth > MAX_NESTING) return undefined;
  const reader = new BinaryReader(message.bytes);
  const nested: PendingMessage[] = [];
  const occurrences = new Map<number, number>();
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    const field = message.desc.fields.find((f) => f.number === fieldNo);
    if (field === undefined || wireType !== WireType.LengthDelimited || !mayHoldMapKeys(field)) {
      reader.skip(wireType, fieldNo);
      continue;
    }
    const content = reader.bytes();
    const inner = (desc: DescMessage, bytes: Uint8Array, at: PathLink | undefined) => ({ desc, bytes, at, depth: message.depth + 1 });
    const named = fieldLink(message.at, message.desc, field);
    if (field.fieldKind === "map") {
      const entry = readMapEntry(content);
      const at = { parent: named, segment: keyText.decode(entry.key) };
      if (field.mapKey === ScalarType.STRING && sameBytes(entry.key, PROTO_KEY_BYTES)) return at;
      if (field.mapKind === "message" && entry.value !== undefined) nested.push(inner(field.message, entry.value, at));
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      // Each element of a repeated message field is one occurrence on the wire.
      const index = occurrences.get(fieldNo) ?? 0;
      occurrences.set(fieldNo, index + 1);
      nested.push(inner(field.message, content, { parent: named, segment: index }));
    } else if (field.fieldKind === "message") {
      nested.push(inner(field.message, content, named));
    }
  }
  for (let index = nested.length - 1; index >= 0; index--) pending.push(nested[index]!);
  return undefined;
}

/**
 * A map entry's key and value bytes. As in protobuf-es's reader, a repeated key or value field in
 * one entry replaces the earlier one.
 */
function readMapEntry(bytes: Uint8Array): { key: Uint8Array; value: Uint8Array | undefined } {
  const reader = new BinaryReader(bytes);
  let key: Uint8Array = new Uint8Array(0);
  let value: Uint8Array | undefined;
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo === 1 && wireType === WireType.LengthDelimited) key = reader.bytes();
    else if (fieldNo === 2 && wireType === WireType.LengthDelimited) value = reader.bytes();
    else reader.skip(wireType, fieldNo);
  }
  return { key, value };
}

/**
 * The path to a field as its JSON form names it, which is how errors name it: the well-known
 * Struct, Value and ListValue are written as plain objects, values and arrays, so their own fields
 * add no name (`data.a`, not `data.fields.a.struct_value`).
 */
function fieldLink(parent: PathLink | undefined, message: DescMessage, field: DescField): PathLink | undefined {
  switch (message.typeName) {
    case "google.protobuf.Struct":
    case "google.protobuf.Value":
    case "google.protobuf.ListValue":
      return parent;
    default:
      return { parent, segment: field.jsonName };
  }
}

const reachesMapKeys = new WeakMap<DescMessage, boolean>();

/** Whether a field's content can contain a string-keyed map, at any depth. */
function mayHoldMapKeys(field: DescField, visiting = new Set<DescMessage>()): boolean {
  switch (field.fieldKind) {
    case "map":
      return field.mapKey === ScalarType.STRING || (field.mapKind === "message" && messageHoldsMapKeys(field.message, visiting));
    case "list":
      return field.listKind === "message" && messageHoldsMapKeys(field.message, visiting);
    case "message":
      return messageHoldsMapKeys(field.message, visiting);
    default:
      return false;
  }
}

function messageHoldsMapKeys(desc: DescMessage, visiting: Set<DescMessage>): boolean {
  const known = reachesMapKeys.get(desc);
  if (known !== undefined) return known;
  // A message already being looked at (Struct -> Value -> Struct) adds nothing new on this path.
  if (visiting.has(desc)) return false;
  visiting.add(desc);
  const holds = desc.fields.some((field) => mayHoldMapKeys(field, visiting));
  visiting.delete(desc);
  // Only a definite answer is kept: a "no" reached inside a cycle may be a "yes" from its start.
  if (holds || visiting.size === 0) reachesMapKeys.set(desc, holds);
  return holds;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index]);
}
