import { ScalarType, toBinary, type DescField, type DescMessage, type JsonValue, type Message } from "@bufbuild/protobuf";

/**
 * Binary encodings written straight from a message's fields, for the few shapes the registry's
 * answers are made of: strings, bools, 64- and 32-bit integers, repeated strings, nested messages
 * of the same kinds, and google.protobuf.Struct. protobuf-es's toBinary goes through reflection,
 * and a Struct field, which it holds as plain JSON, is turned into Struct and Value messages on
 * every call, which made binary several times dearer than JSON (docs/performance.md#encoding-answers).
 * Written here in two passes (sizes, then bytes into one buffer), it takes as long as the JSON.
 *
 * The bytes are protobuf-es's, byte for byte (test/edge/fast-binary.test.ts holds them equal over
 * generated messages): fields in number order, implicit-presence fields only when not zero,
 * explicit ones when set, map entries in the object's key order with key and value always written.
 */
const IMPLICIT = 2;
const STRUCT = "google.protobuf.Struct";

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const LEN = 2;
const VARINT = 0;
const I64 = 1;

type FieldPlan =
  | { readonly kind: "string"; readonly name: string; readonly tag: number; readonly implicit: boolean }
  | { readonly kind: "bool"; readonly name: string; readonly tag: number; readonly implicit: boolean }
  | { readonly kind: "int"; readonly name: string; readonly tag: number; readonly implicit: boolean }
  | { readonly kind: "strings"; readonly name: string; readonly tag: number }
  | { readonly kind: "struct"; readonly name: string; readonly tag: number }
  | { readonly kind: "message"; readonly name: string; readonly tag: number; readonly plan: readonly FieldPlan[] }
  | { readonly kind: "messages"; readonly name: string; readonly tag: number; readonly plan: readonly FieldPlan[] };

const plans = new Map<DescMessage, readonly FieldPlan[] | null>();

/** The message's binary encoding: written directly when its schema's shape allows, else by protobuf-es. */
export function encodeBinary(schema: DescMessage, message: Message): Uint8Array {
  const plan = planOf(schema);
  // Fields this code does not know (kept from a parse) are protobuf-es's to write.
  if (plan === undefined || (message as { $unknown?: unknown }).$unknown !== undefined) return toBinary(schema, message as never);
  const bytes = Buffer.allocUnsafe(sizeOfFields(plan, message));
  const end = writeFields(plan, message, bytes, 0);
  if (end !== bytes.length) throw new Error(`fast binary writer: wrote ${end} of ${bytes.length} bytes`);
  return bytes;
}

/** Whether encodeBinary writes the schema's messages itself: every field is of a kind it knows. */
export function writesDirectly(schema: DescMessage): boolean {
  return planOf(schema) !== undefined;
}

function planOf(schema: DescMessage): readonly FieldPlan[] | undefined {
  if (!plans.has(schema)) {
    plans.set(schema, null); // a schema that contains itself is not planned
    plans.set(schema, makePlan(schema) ?? null);
  }
  return plans.get(schema) ?? undefined;
}

function makePlan(schema: DescMessage): FieldPlan[] | undefined {
  const plan: FieldPlan[] = [];
  for (const field of [...schema.fields].sort((a, b) => a.number - b.number)) {
    const step = fieldPlan(field);
    if (step === undefined) return undefined;
    plan.push(step);
  }
  return plan;
}

function fieldPlan(field: DescField): FieldPlan | undefined {
  if (field.oneof !== undefined) return undefined;
  const name = field.localName;
  const implicit = field.presence === IMPLICIT;
  switch (field.fieldKind) {
    case "scalar":
      switch (field.scalar) {
        case ScalarType.STRING:
          return { kind: "string", name, tag: (field.number << 3) | LEN, implicit };
        case ScalarType.BOOL:
          return { kind: "bool", name, tag: (field.number << 3) | VARINT, implicit };
        case ScalarType.INT64:
        case ScalarType.INT32:
          return { kind: "int", name, tag: (field.number << 3) | VARINT, implicit };
        default:
          return undefined;
      }
    case "list": {
      if (field.listKind === "scalar" && field.scalar === ScalarType.STRING)
        return { kind: "strings", name, tag: (field.number << 3) | LEN };
      if (field.listKind !== "message" || field.delimitedEncoding || field.message.typeName === STRUCT) return undefined;
      const nested = planOf(field.message);
      return nested === undefined ? undefined : { kind: "messages", name, tag: (field.number << 3) | LEN, plan: nested };
    }
    case "message": {
      if (field.delimitedEncoding) return undefined;
      if (field.message.typeName === STRUCT) return { kind: "struct", name, tag: (field.number << 3) | LEN };
      const nested = planOf(field.message);
      return nested === undefined ? undefined : { kind: "message", name, tag: (field.number << 3) | LEN, plan: nested };
    }
    default:
      return undefined;
  }
}

type Fields = Record<string, unknown>;

function isSet(step: FieldPlan, value: unknown): boolean {
  if (value === undefined) return false;
  switch (step.kind) {
    case "string":
      return !step.implicit || value !== "";
    case "bool":
      return !step.implicit || value === true;
    case "int":
      return !step.implicit || (value !== 0 && value !== 0n && value !== "0");
    case "strings":
      return (value as readonly string[]).length > 0;
    default:
      return true;
  }
}

function sizeOfFields(plan: readonly FieldPlan[], message: unknown): number {
  let size = 0;
  for (const step of plan) {
    const value = (message as Fields)[step.name];
    if (!isSet(step, value)) continue;
    const tag = varintSize(step.tag);
    switch (step.kind) {
      case "string":
        size += tag + lengthDelimitedSize(utf8Length(value as string));
        break;
      case "bool":
        size += tag + 1;
        break;
      case "int":
        size += tag + int64Size(BigInt(value as bigint | number | string));
        break;
      case "strings":
        for (const item of value as readonly string[]) size += tag + lengthDelimitedSize(utf8Length(item));
        break;
      case "struct":
        size += tag + lengthDelimitedSize(structSize(value as Record<string, JsonValue>));
        break;
      case "message":
        size += tag + lengthDelimitedSize(sizeOfFields(step.plan, value));
        break;
      case "messages":
        for (const item of value as readonly unknown[]) size += tag + lengthDelimitedSize(sizeOfFields(step.plan, item));
        break;
    }
  }
  return size;
}

function writeFields(plan: readonly FieldPlan[], message: unknown, out: Buffer, at: number): number {
  for (const step of plan) {
    const value = (message as Fields)[step.name];
    if (!isSet(step, value)) continue;
    switch (step.kind) {
      case "string":
        at = writeString(out, writeVarint(out, at, step.tag), value as string);
        break;
      case "bool":
        out[(at = writeVarint(out, at, step.tag))] = value === true ? 1 : 0;
        at += 1;
        break;
      case "int":
        at = writeInt64(out, writeVarint(out, at, step.tag), BigInt(value as bigint | number | string));
        break;
      case "strings":
        for (const item of value as readonly string[]) at = writeString(out, writeVarint(out, at, step.tag), item);
        break;
      case "struct": {
        const fields = value as Record<string, JsonValue>;
        at = writeStruct(out, writeVarint(out, writeVarint(out, at, step.tag), structSize(fields)), fields);
        break;
      }
      case "message":
        at = writeFields(step.plan, value, out, writeVarint(out, writeVarint(out, at, step.tag), sizeOfFields(step.plan, value)));
        break;
      case "messages":
        for (const item of value as readonly unknown[])
          at = writeFields(step.plan, item, out, writeVarint(out, writeVarint(out, at, step.tag), sizeOfFields(step.plan, item)));
        break;
    }
  }
  return at;
}

// google.protobuf.Struct: map<string, Value> fields = 1. Value: null_value = 1 (enum), number_value = 2
// (double), string_value = 3, bool_value = 4, struct_value = 5, list_value = 6. ListValue: repeated
// Value values = 1. Each map entry: key = 1, value = 2.
const STRUCT_FIELD = (1 << 3) | LEN;
const ENTRY_KEY = (1 << 3) | LEN;
const ENTRY_VALUE = (2 << 3) | LEN;
const NULL_VALUE = (1 << 3) | VARINT;
const NUMBER_VALUE = (2 << 3) | I64;
const STRING_VALUE = (3 << 3) | LEN;
const BOOL_VALUE = (4 << 3) | VARINT;
const STRUCT_VALUE = (5 << 3) | LEN;
const LIST_VALUE = (6 << 3) | LEN;
const LIST_ITEM = (1 << 3) | LEN;

function structSize(fields: Record<string, JsonValue>): number {
  let size = 0;
  for (const key of Object.keys(fields)) size += 1 + lengthDelimitedSize(mapEntrySize(key, fields[key] as JsonValue));
  return size;
}

function mapEntrySize(key: string, value: JsonValue): number {
  return 1 + lengthDelimitedSize(utf8Length(key)) + 1 + lengthDelimitedSize(valueSize(value));
}

function valueSize(value: JsonValue): number {
  if (value === null) return 2;
  switch (typeof value) {
    case "number":
      return 9;
    case "string":
      return 1 + lengthDelimitedSize(utf8Length(value));
    case "boolean":
      return 2;
    default:
      return 1 + lengthDelimitedSize(Array.isArray(value) ? listSize(value) : structSize(value as Record<string, JsonValue>));
  }
}

function listSize(items: readonly JsonValue[]): number {
  let size = 0;
  for (const item of items) size += 1 + lengthDelimitedSize(valueSize(item));
  return size;
}

function writeStruct(out: Buffer, at: number, fields: Record<string, JsonValue>): number {
  for (const key of Object.keys(fields)) {
    const value = fields[key] as JsonValue;
    at = writeVarint(out, writeVarint(out, at, STRUCT_FIELD), mapEntrySize(key, value));
    at = writeString(out, writeVarint(out, at, ENTRY_KEY), key);
    at = writeValue(out, writeVarint(out, writeVarint(out, at, ENTRY_VALUE), valueSize(value)), value);
  }
  return at;
}

function writeValue(out: Buffer, at: number, value: JsonValue): number {
  if (value === null) {
    out[at] = NULL_VALUE;
    out[at + 1] = 0;
    return at + 2;
  }
  switch (typeof value) {
    case "number":
      out[at] = NUMBER_VALUE;
      out.writeDoubleLE(value, at + 1);
      return at + 9;
    case "string":
      return writeString(out, writeVarint(out, at, STRING_VALUE), value);
    case "boolean":
      out[at] = BOOL_VALUE;
      out[at + 1] = value ? 1 : 0;
      return at + 2;
    default:
      if (Array.isArray(value)) {
        at = writeVarint(out, writeVarint(out, at, LIST_VALUE), listSize(value));
        for (const item of value) at = writeValue(out, writeVarint(out, writeVarint(out, at, LIST_ITEM), valueSize(item)), item);
        return at;
      }
      return writeStruct(
        out,
        writeVarint(out, writeVarint(out, at, STRUCT_VALUE), structSize(value as Record<string, JsonValue>)),
        value as Record<string, JsonValue>,
      );
  }
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 128);
    size += 1;
  }
  return size;
}

function lengthDelimitedSize(length: number): number {
  return varintSize(length) + length;
}

function writeVarint(out: Buffer, at: number, value: number): number {
  while (value >= 0x80) {
    out[at++] = (value & 0x7f) | 0x80;
    value = Math.floor(value / 128);
  }
  out[at] = value;
  return at + 1;
}

/**
 * UTF-8 length as Buffer.byteLength counts it (a lone surrogate is U+FFFD, three bytes), without a
 * call into C++ for the short strings answers are made of.
 */
function utf8Length(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) length += 1;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      length += 2; // a pair: two UTF-16 units, four bytes
      i += 1;
    } else length += 2;
  }
  return length;
}

function writeString(out: Buffer, at: number, text: string): number {
  const length = utf8Length(text);
  at = writeVarint(out, at, length);
  if (length !== text.length) return at + out.write(text, at, "utf8");
  for (let i = 0; i < length; i += 1) out[at + i] = text.charCodeAt(i);
  return at + length;
}

/** Varints of 64-bit integers: negative ones as their two's complement, ten bytes. */
function int64Size(value: bigint): number {
  if (value >= 0n && value <= SAFE) return varintSize(Number(value));
  let unsigned = BigInt.asUintN(64, value);
  let size = 1;
  while (unsigned >= 0x80n) {
    unsigned >>= 7n;
    size += 1;
  }
  return size;
}

function writeInt64(out: Buffer, at: number, value: bigint): number {
  if (value >= 0n && value <= SAFE) return writeVarint(out, at, Number(value));
  let unsigned = BigInt.asUintN(64, value);
  while (unsigned >= 0x80n) {
    out[at++] = Number(unsigned & 0x7fn) | 0x80;
    unsigned >>= 7n;
  }
  out[at] = Number(unsigned);
  return at + 1;
}
