import { toJson, toJsonString, type DescField, type DescMessage, type JsonObject, type Message } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { encodeBinary } from "../../transport/fast-binary.js";

/**
 * Response encodings that reuse the encodings of the messages inside them. Implementations hand
 * back the same message object for the same stored state (a cached entry is one object for as
 * long as it is cached) and never change a message once returned, so a message's bytes, binary or
 * JSON, can be remembered by identity. Encoding a resolve's entry was most of a binary call's
 * CPU; with this it happens once per entry, whatever the protocol.
 */

/** Every field on the wire, as the Connect router's JSON options did: clients see defaults too. */
const JSON_WRITE = { alwaysEmitImplicit: true } as const;

const binaryOf = new WeakMap<object, Uint8Array>();
const jsonOf = new WeakMap<object, string>();

function cachedBinary(schema: DescMessage, message: Message): Uint8Array {
  let bytes = binaryOf.get(message);
  if (bytes === undefined) {
    bytes = encodeBinary(schema, message);
    binaryOf.set(message, bytes);
  }
  return bytes;
}

/**
 * Writers of their own for messages rendered too often for reflection (see writeJsonWith). Each
 * writer takes its message as an argument rather than closing over it: V8's young-generation
 * collector holds a weak map's values strongly, so a value that reached its own key would keep
 * every such message alive until a full collection.
 */
const jsonWriterOf = new WeakMap<object, (message: never) => string>();

/**
 * The JSON text of a message, computed once per message object; a message with a writer of its
 * own is made for one answer and written each time it is asked for, not remembered.
 */
export function cachedJson(schema: DescMessage, message: Message): string {
  const writer = jsonWriterOf.get(message);
  if (writer !== undefined) return writer(message as never);
  let json = jsonOf.get(message);
  if (json === undefined) {
    json = toJsonString(schema, message as never, JSON_WRITE);
    jsonOf.set(message, json);
  }
  return json;
}

/**
 * Gives a message a JSON writer of its own, used instead of reflection whenever its JSON is asked
 * for (binary answers never ask). The writer must make what cachedJson would; a test holds
 * each such writer to protobuf-es byte for byte.
 */
export function writeJsonWith<M extends Message>(message: M, write: (message: M) => string): M {
  jsonWriterOf.set(message, write);
  return message;
}

const jsonBytesOf = new WeakMap<object, Buffer>();

/** The JSON of a message as UTF-8 bytes, made once per message object; never to be written to. */
export function cachedJsonBytes(schema: DescMessage, message: Message): Buffer {
  let bytes = jsonBytesOf.get(message);
  if (bytes === undefined) {
    bytes = Buffer.from(cachedJson(schema, message));
    jsonBytesOf.set(message, bytes);
  }
  return bytes;
}

/**
 * Singular and repeated fields holding the project's own messages: those are reused. Maps and
 * oneofs are left to protobuf-es, and so are well-known types, which protobuf-es represents as
 * plain JSON values (a Struct field is a JsonObject) rather than as messages.
 */
function reusableFields(schema: DescMessage): readonly DescField[] {
  return schema.fields.filter((field) => {
    if (field.oneof !== undefined) return false;
    const holdsMessages = field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message");
    return holdsMessages && !(field.message as DescMessage).typeName.startsWith("google.protobuf.");
  });
}

const fieldsOf = new WeakMap<DescMessage, readonly DescField[]>();
function messageFieldsOf(schema: DescMessage): readonly DescField[] {
  let fields = fieldsOf.get(schema);
  if (fields === undefined) {
    fields = reusableFields(schema);
    fieldsOf.set(schema, fields);
  }
  return fields;
}

/** The message's own fields, those holding messages left empty (they are encoded separately). */
function withoutMessageFields(message: Message, fields: readonly DescField[]): Message {
  const rest: Record<string, unknown> = { ...message };
  for (const field of fields) rest[field.localName] = field.fieldKind === "list" ? [] : undefined;
  return rest as unknown as Message;
}

function elementsOf(message: Message, field: DescField): Message[] {
  const value = (message as unknown as Record<string, unknown>)[field.localName];
  if (field.fieldKind === "list") return value as Message[];
  return value === undefined ? [] : [value as Message];
}

/**
 * The field of a response that only wraps one message (ResolveEntryResponse's entry): its whole
 * encoding is a function of that message alone, so it is remembered per message too.
 */
function wrappedField(schema: DescMessage): DescField | undefined {
  const [field] = messageFieldsOf(schema);
  return schema.fields.length === 1 && field?.fieldKind === "message" ? field : undefined;
}

const wrappedBinaryOf = new WeakMap<DescMessage, WeakMap<object, Buffer>>();
const wrappedJsonOf = new WeakMap<DescMessage, WeakMap<object, Buffer>>();

function rememberedFor(memo: WeakMap<DescMessage, WeakMap<object, Buffer>>, schema: DescMessage, key: object, make: () => Buffer): Buffer {
  let bySchema = memo.get(schema);
  if (bySchema === undefined) memo.set(schema, (bySchema = new WeakMap()));
  let bytes = bySchema.get(key);
  if (bytes === undefined) bySchema.set(key, (bytes = make()));
  return bytes;
}

/** The binary answer as bytes; never to be written to (it may be shared by every answer of an entry). */
export function responseBinaryBytes(schema: DescMessage, message: Message): Buffer {
  const field = wrappedField(schema);
  const inner = field === undefined ? undefined : elementsOf(message, field)[0];
  if (field === undefined || inner === undefined) return asBuffer(responseBinary(schema, message));
  return rememberedFor(wrappedBinaryOf, schema, inner, () => asBuffer(responseBinary(schema, message)));
}

/** The JSON answer as UTF-8 bytes; never to be written to. */
export function responseJsonBytes(schema: DescMessage, message: Message): Buffer {
  const field = wrappedField(schema);
  const inner = field === undefined ? undefined : elementsOf(message, field)[0];
  if (field === undefined || inner === undefined) return Buffer.from(responseJson(schema, message));
  return rememberedFor(wrappedJsonOf, schema, inner, () => Buffer.from(responseJson(schema, message)));
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The binary form of a response: its message fields from their remembered encodings, the rest by
 * protobuf-es. Fields may appear out of number order on the wire, which every parser accepts
 * (the encoding spec allows any order; repeated fields keep theirs).
 */
export function responseBinary(schema: DescMessage, message: Message): Uint8Array {
  const fields = messageFieldsOf(schema);
  if (fields.length === 0) return encodeBinary(schema, message);
  const writer = new BinaryWriter();
  writer.raw(encodeBinary(schema, withoutMessageFields(message, fields)));
  for (const field of fields) {
    for (const element of elementsOf(message, field)) {
      writer.tag(field.number, WireType.LengthDelimited).bytes(cachedBinary(field.message as DescMessage, element));
    }
  }
  return writer.finish();
}

/** The JSON form of a response, its message fields spliced in from their remembered JSON. */
export function responseJson(schema: DescMessage, message: Message): string {
  const fields = messageFieldsOf(schema);
  if (fields.length === 0) return toJsonString(schema, message as never, JSON_WRITE);
  const rest = toJson(schema, withoutMessageFields(message, fields) as never, JSON_WRITE) as JsonObject;
  const parts: string[] = [];
  for (const [key, value] of Object.entries(rest)) {
    if (fields.some((field) => field.jsonName === key)) continue;
    parts.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
  }
  for (const field of fields) {
    const elements = elementsOf(message, field).map((element) => cachedJson(field.message as DescMessage, element));
    if (field.fieldKind === "list") parts.push(`${JSON.stringify(field.jsonName)}:[${elements.join(",")}]`);
    else if (elements.length === 1) parts.push(`${JSON.stringify(field.jsonName)}:${elements[0]}`);
  }
  return `{${parts.join(",")}}`;
}
