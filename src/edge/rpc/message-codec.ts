import { fromBinary, fromJson, type DescMessage, type JsonValue, type Message } from "@bufbuild/protobuf";
import { deepFreeze } from "../../domain/deep-freeze.js";
import { InvalidArgumentError } from "../../errors.js";
import type { MessageCodec } from "../../transport/message-codec.js";
import { createDecodedRequests, DECODED_REQUEST_KEY_MAX } from "../decoded-requests.js";
import { findProtoKeyInJson, findProtoKeyInWire } from "../struct-keys.js";
import { responseBinaryBytes, responseJsonBytes } from "./reused-encodings.js";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A body as UTF-8 text, refusing invalid sequences rather than replacing them with U+FFFD. */
export function decodeUtf8(bytes: Uint8Array, field = "body"): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw InvalidArgumentError.of(field, "is not valid UTF-8");
  }
}

/** Parses JSON text; `field` names what was being read in the error. */
export function parseJson(text: string, field = "body"): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw InvalidArgumentError.of(field, "is not valid JSON");
  }
}

/**
 * A request message from its JSON form. "__proto__" keys are refused here, while they are still
 * visible: protobuf-es stores google.protobuf.Struct keys by assignment, where "__proto__" sets
 * the object's prototype instead of adding a key, so the key would vanish before signature checks.
 */
export function messageFromJson<T extends DescMessage>(schema: T, json: JsonValue): Message {
  const protoKey = findProtoKeyInJson(json);
  if (protoKey !== undefined) throw InvalidArgumentError.of(protoKey, 'the key "__proto__" is not allowed');
  try {
    return fromJson(schema, json);
  } catch (error) {
    throw InvalidArgumentError.of("body", `is not a valid ${schema.typeName} in JSON: ${(error as Error).message}`);
  }
}

/** A request message from its binary form; strings must be valid UTF-8 (proto3). */
export function messageFromBinary<T extends DescMessage>(schema: T, bytes: Uint8Array): Message {
  const protoKey = findProtoKeyInWire(schema, bytes);
  if (protoKey !== undefined) throw InvalidArgumentError.of(protoKey, 'the key "__proto__" is not allowed');
  try {
    return fromBinary(schema, bytes);
  } catch (error) {
    throw InvalidArgumentError.of("body", `is not a valid ${schema.typeName} message: ${(error as Error).message}`);
  }
}

/**
 * The registry's codec for the RPC protocols: "__proto__" keys refused and bad input named by
 * field (invalid_argument), answers encoded once per message and reused (reused-encodings.ts).
 * Requests of the `repeated` schemas (reads that are asked for again and again) are decoded once
 * per distinct body and shared, frozen.
 */
export function createRegistryMessageCodec(repeated: readonly DescMessage[]): MessageCodec {
  const shared = new Set(repeated);
  const decoded = createDecodedRequests<Message>(deepFreeze);
  const keyOf = (form: string, schema: DescMessage, bytes: Uint8Array) =>
    `${form}${schema.typeName} ${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1")}`;
  const readJson = (schema: DescMessage, bytes: Uint8Array) => messageFromJson(schema, parseJson(decodeUtf8(bytes)));
  const once =
    (form: string, read: (schema: DescMessage, bytes: Uint8Array) => Message) =>
    (schema: DescMessage, bytes: Uint8Array): Message => {
      if (!shared.has(schema) || bytes.byteLength > DECODED_REQUEST_KEY_MAX) return read(schema, bytes);
      const key = keyOf(form, schema, bytes);
      return decoded.get(key) ?? decoded.keep(key, read(schema, bytes));
    };
  return Object.freeze({
    readBinary: once("b", messageFromBinary),
    readJson: once("j", readJson),
    writeBinary: responseBinaryBytes,
    writeJson: responseJsonBytes,
  });
}
