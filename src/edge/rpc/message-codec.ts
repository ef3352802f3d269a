import {
  create,
  fromBinary,
  fromJson,
  toBinary,
  type DescMessage,
  type JsonValue,
  type Message,
} from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import type { ConnectError } from "@connectrpc/connect";
import { InvalidArgumentError } from "../../errors.js";
import { StatusSchema } from "../../../gen/google/rpc/status_pb.js";
import { findProtoKeyInJson, findProtoKeyInWire } from "../struct-keys.js";

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

export { responseBinaryBytes as messageToBinary, responseJsonBytes as messageToJson } from "./reused-encodings.js";

/** The google.rpc.Status of an error, as gRPC's grpc-status-details-bin carries it. */
export function statusOf(error: ConnectError): Uint8Array {
  const status = create(StatusSchema, {
    code: error.code,
    message: error.rawMessage,
    details: error.details.map((detail) =>
      "desc" in detail
        ? anyPack(detail.desc, create(detail.desc, detail.value))
        : { typeUrl: `type.googleapis.com/${detail.type}`, value: detail.value },
    ),
  });
  return toBinary(StatusSchema, status);
}

/** An error's details as type name and binary value, whichever form they were made in. */
export function detailsOf(error: ConnectError): { type: string; value: Uint8Array }[] {
  return error.details.map((detail) =>
    "desc" in detail
      ? { type: detail.desc.typeName, value: toBinary(detail.desc, create(detail.desc, detail.value)) }
      : { type: detail.type, value: detail.value },
  );
}
