import { toJson, toJsonString, type DescField, type DescMessage, type JsonObject, type Message } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { deepFreeze } from "../../domain/deep-freeze.js";
import { encodeBinary } from "../../transport/fast-binary.js";

/**
 * Response encodings. An answer served again and again (a kept answer, read-answers.ts) is frozen
 * with its encodings attached (`freezeWithEncodings`): each is made once, when first asked for,
 * and cannot go stale, since the message it was made from can no longer change. Any other message
 * is encoded for its one answer.
 */

/** Every field on the wire, as the Connect router's JSON options did: clients see defaults too. */
export const JSON_WRITE = { alwaysEmitImplicit: true } as const;

const ENCODINGS = Symbol("encodings");
const JSON_WRITER = Symbol("json writer");

/** The encodings of one frozen message, each made when first read. */
export class Encodings {
  #binary: Buffer | undefined;
  #jsonBytes: Buffer | undefined;

  constructor(
    readonly schema: DescMessage,
    readonly message: Message,
  ) {
    Object.freeze(this);
  }

  /** The binary form; never to be written to (every answer of this message shares it). */
  get binary(): Buffer {
    return (this.#binary ??= asBuffer(responseBinary(this.schema, this.message)));
  }

  /** The JSON form as UTF-8 bytes; never to be written to. */
  get jsonBytes(): Buffer {
    return (this.#jsonBytes ??= freshJsonBytes(this.schema, this.message));
  }
}

type Encoded = { readonly [ENCODINGS]?: Encodings; readonly [JSON_WRITER]?: (message: never) => string };

/** The encodings frozen with `message`, if it was frozen with them. */
export function encodingsOf(message: Message): Encodings | undefined {
  return (message as Encoded)[ENCODINGS];
}

/**
 * Freezes `message`, everything it holds, and the project's messages inside it, each with its
 * encodings attached, and returns it. Changing it afterwards throws in strict mode (all of src/).
 */
export function freezeWithEncodings<M extends Message>(schema: DescMessage, message: M): M {
  if (encodingsOf(message) !== undefined || Object.isFrozen(message)) return message;
  for (const field of messageFieldsOf(schema)) {
    for (const element of elementsOf(message, field)) freezeWithEncodings(field.message as DescMessage, element);
  }
  Object.defineProperty(message, ENCODINGS, { value: new Encodings(schema, message) });
  return deepFreeze(message);
}

/**
 * Gives a message a JSON writer of its own, used instead of reflection whenever its JSON is asked
 * for (binary answers never ask): for messages rendered too often for reflection. The writer must
 * make what protobuf-es would; a test holds each such writer to protobuf-es byte for byte.
 */
export function writeJsonWith<M extends Message>(message: M, write: (message: M) => string): M {
  Object.defineProperty(message, JSON_WRITER, { value: write });
  return message;
}

/** The JSON text of a message: from its own writer when it has one, else from its bytes or by reflection. */
export function messageJson(schema: DescMessage, message: Message): string {
  const encoded = message as Encoded;
  const writer = encoded[JSON_WRITER];
  if (writer !== undefined) return writer(message as never);
  const encodings = encoded[ENCODINGS];
  if (encodings !== undefined) return encodings.jsonBytes.toString("utf8");
  return toJsonString(schema, message as never, JSON_WRITE);
}

/**
 * A message's JSON as UTF-8 bytes, a whole answer or part of one; never to be written to (a
 * frozen message's are shared). The messages it holds are spliced in from their writers or kept
 * encodings rather than reflected over.
 */
export function responseJsonBytes(schema: DescMessage, message: Message): Buffer {
  return encodingsOf(message)?.jsonBytes ?? freshJsonBytes(schema, message);
}

/** The JSON bytes made anew: by the message's own writer when it has one. */
function freshJsonBytes(schema: DescMessage, message: Message): Buffer {
  const writer = (message as Encoded)[JSON_WRITER];
  if (writer !== undefined) return Buffer.from(writer(message as never));
  return Buffer.concat(jsonChunks(schema, message));
}

/** The binary answer as bytes; never to be written to (a frozen message's are shared). */
export function responseBinaryBytes(schema: DescMessage, message: Message): Buffer {
  return encodingsOf(message)?.binary ?? asBuffer(responseBinary(schema, message));
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

/** By schema: descriptors are made once, when the generated code loads, and never change. */
const fieldsOf = new Map<DescMessage, readonly DescField[]>();
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

function elementsOf(message: Message, field: DescField): readonly Message[] {
  const value = (message as unknown as Record<string, unknown>)[field.localName];
  if (field.fieldKind === "list") return value as Message[];
  return value === undefined ? [] : [value as Message];
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function elementBinary(schema: DescMessage, message: Message): Uint8Array {
  return encodingsOf(message)?.binary ?? encodeBinary(schema, message);
}

/**
 * The binary form of a response: its message fields from their own encodings, the rest by
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
      writer.tag(field.number, WireType.LengthDelimited).bytes(elementBinary(field.message as DescMessage, element));
    }
  }
  return writer.finish();
}

const COMMA = Buffer.from(",");

/**
 * The JSON form of a message as UTF-8 chunks, its message fields spliced in from their own JSON
 * (their writers, or their kept encodings), every member in field-number order as protobuf-es
 * writes them. Chunks, not one string: a page of records as one string costs several times its
 * parts' encoding once it is flattened and encoded (docs/performance.md#encoding-answers).
 */
function jsonChunks(schema: DescMessage, message: Message): Buffer[] {
  const fields = messageFieldsOf(schema);
  if (fields.length === 0) return [Buffer.from(toJsonString(schema, message as never, JSON_WRITE))];
  const rest = toJson(schema, withoutMessageFields(message, fields) as never, JSON_WRITE) as JsonObject;
  const chunks: Buffer[] = [];
  let text = "{";
  let members = 0;
  const member = (name: string) => {
    text += `${members++ === 0 ? "" : ","}${JSON.stringify(name)}:`;
  };
  for (const field of fieldsByNumber(schema)) {
    if (!fields.includes(field)) {
      if (field.jsonName in rest) {
        member(field.jsonName);
        text += JSON.stringify(rest[field.jsonName]);
      }
      continue;
    }
    const elements = elementsOf(message, field);
    const list = field.fieldKind === "list";
    if (!list && elements.length === 0) continue;
    member(field.jsonName);
    if (list) text += "[";
    elements.forEach((element, i) => {
      if (i === 0) chunks.push(Buffer.from(text));
      else chunks.push(COMMA);
      chunks.push(responseJsonBytes(field.message as DescMessage, element));
      text = "";
    });
    if (list) text += "]";
  }
  chunks.push(Buffer.from(`${text}}`));
  return chunks;
}

const byNumber = new Map<DescMessage, readonly DescField[]>();
function fieldsByNumber(schema: DescMessage): readonly DescField[] {
  let fields = byNumber.get(schema);
  if (fields === undefined) {
    fields = [...schema.fields].sort((a, b) => a.number - b.number);
    byNumber.set(schema, fields);
  }
  return fields;
}
