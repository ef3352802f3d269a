import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, fromJson, toBinary, type DescMessage, type JsonValue, type Message } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import { failure, type CallResult } from "../support/protocol-clients.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";

/**
 * Sends abusive requests byte for byte, which the ordinary test clients cannot: JSON number texts
 * such as 1e400, `__proto__` keys (which protobuf-es's own readers and writers drop), NaN in a
 * protobuf double. The JSON transports write the request text themselves; the binary ones encode
 * with protobuf-es and send the bytes through the real Connect, gRPC-Web and grpc-js clients.
 */

/** REST, Connect with JSON, and the binary protocols (Connect and gRPC-Web with protobuf, gRPC). */
export type Transport = "rest" | "connect-json" | "connect" | "grpc-web" | "grpc";
export const TRANSPORTS: readonly Transport[] = ["rest", "connect-json", "connect", "grpc-web", "grpc"];
export const JSON_TRANSPORTS: readonly Transport[] = ["rest", "connect-json"];
export const BINARY_TRANSPORTS: readonly Transport[] = ["connect", "grpc-web", "grpc"];

/** A number written into JSON as exactly this text; binary transports send Number(text). */
export class NumberText {
  constructor(readonly text: string) {}
}

/** A request value: JSON plus NumberText, and numbers JSON cannot hold (NaN, Infinity) for binary transports. */
export type AbuseValue = null | boolean | number | string | NumberText | AbuseValue[] | { [key: string]: AbuseValue };

/** An object with exactly these own keys, "__proto__" included (an object literal would set the prototype). */
export function objectWithKeys(entries: readonly (readonly [string, AbuseValue])[]): { [key: string]: AbuseValue } {
  const object: { [key: string]: AbuseValue } = {};
  for (const [key, value] of entries) Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  return object;
}

export type AbuseCall =
  | { readonly method: "CreateEntry"; readonly entry: AbuseValue; readonly token: string }
  | {
      readonly method: "RevokeEntry";
      readonly did: string;
      readonly reason: AbuseValue;
      readonly signature: string;
      readonly token: string;
    }
  | { readonly method: "DiscoverEntries"; readonly body: AbuseValue }
  | { readonly method: "QueryEntries"; readonly body: AbuseValue };

export async function sendAbuse(transport: Transport, baseUrl: string, call: AbuseCall): Promise<CallResult> {
  if (transport === "rest") return sendRest(baseUrl, call);
  if (transport === "connect-json") return sendConnectJson(baseUrl, call);
  return sendBinary(transport, baseUrl, call);
}

/** The request message's JSON form (REST bodies are its `body` part). */
function requestValue(call: AbuseCall): AbuseValue {
  switch (call.method) {
    case "CreateEntry":
      return objectWithKeys([["entry", call.entry]]);
    case "RevokeEntry":
      return { did: call.did, reason: call.reason, signature: call.signature };
    default:
      return call.body;
  }
}

function tokenOf(call: AbuseCall): string | undefined {
  return "token" in call ? call.token : undefined;
}

async function sendRest(baseUrl: string, call: AbuseCall): Promise<CallResult> {
  const route = {
    CreateEntry: () => ({ method: "POST", path: "/v1/entries", body: (call as { entry: AbuseValue }).entry }),
    RevokeEntry: () => {
      const revoke = call as Extract<AbuseCall, { method: "RevokeEntry" }>;
      return {
        method: "DELETE",
        path: `/v1/entries/${encodeURIComponent(revoke.did)}`,
        body: { reason: revoke.reason, signature: revoke.signature } as AbuseValue,
      };
    },
    DiscoverEntries: () => ({ method: "POST", path: "/v1/discover", body: requestValue(call) }),
    QueryEntries: () => ({ method: "POST", path: "/v1/discover/ql", body: requestValue(call) }),
  }[call.method]();
  const response = await fetch(baseUrl + route.path, {
    method: route.method,
    headers: jsonHeaders(tokenOf(call)),
    body: jsonText(route.body),
  });
  const json: any = await response.json().catch(() => ({ code: "unparseable" }));
  if (response.ok) return { code: "ok", body: json, message: "", fields: [], httpStatus: response.status };
  const fields = (json.details ?? []).flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field));
  return { code: json.code, body: json, message: json.message ?? "", fields, httpStatus: response.status };
}

async function sendConnectJson(baseUrl: string, call: AbuseCall): Promise<CallResult> {
  const response = await fetch(`${baseUrl}/${RegistryService.typeName}/${call.method}`, {
    method: "POST",
    headers: jsonHeaders(tokenOf(call)),
    body: jsonText(requestValue(call)),
  });
  const json: any = await response.json().catch(() => ({ code: "unparseable" }));
  if (response.ok) return { code: "ok", body: json, message: "", fields: [] };
  const fields = (json.details ?? [])
    .filter((d: any) => d.type === BadRequestSchema.typeName)
    .flatMap((d: any) => fromBinary(BadRequestSchema, base64Decode(d.value)).fieldViolations.map((v) => v.field));
  return { code: json.code, body: json, message: json.message ?? "", fields };
}

function jsonHeaders(token: string | undefined): Record<string, string> {
  return { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) };
}

/** JSON text with NumberText written verbatim and every own key, "__proto__" included. */
export function jsonText(value: AbuseValue): string {
  if (value instanceof NumberText) return value.text;
  if (typeof value === "number" && !Number.isFinite(value)) throw new Error(`JSON cannot carry ${value}; send it on a binary transport`);
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jsonText).join(",")}]`;
  return `{${Object.keys(value)
    .map((key) => `${JSON.stringify(key)}:${jsonText(value[key]!)}`)
    .join(",")}}`;
}

/**
 * protobuf-es's writer drops "__proto__" map keys like its readers do, so keys are written under a
 * stand-in of the same UTF-8 length and swapped back in the encoded bytes, which stay valid.
 */
const PROTO_KEY = new TextEncoder().encode("__proto__");
const STAND_IN = new TextEncoder().encode("__PROTO__");

function sendBinary(transport: "connect" | "grpc-web" | "grpc", baseUrl: string, call: AbuseCall): Promise<CallResult> {
  const method = RegistryService.method[lowerFirst(call.method) as keyof typeof RegistryService.method];
  const request = messageCarrying(method.input, encodedRequest(method.input, requestValue(call)));
  const token = tokenOf(call);
  return transport === "grpc"
    ? sendGrpc(baseUrl, call.method, request, token)
    : sendConnect(transport, baseUrl, call.method, request, token);
}

/** The request's protobuf bytes, "__proto__" keys included. */
export function encodedRequest(schema: DescMessage, value: AbuseValue): Uint8Array {
  const bytes = toBinary(schema, fromJson(schema, withStandInKeys(value) as JsonValue));
  return replaceAll(bytes, STAND_IN, PROTO_KEY);
}

/** A message that encodes to exactly `bytes`: every field rides as an unknown field, written back verbatim. */
function messageCarrying(schema: DescMessage, bytes: Uint8Array): Message {
  const message = create(schema) as Message & { $unknown?: unknown };
  message.$unknown = fromBinary(EmptySchema, bytes).$unknown;
  return message;
}

function withStandInKeys(value: AbuseValue): unknown {
  if (value instanceof NumberText) return Number(value.text);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(withStandInKeys);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key === "__proto__" ? "__PROTO__" : key] = withStandInKeys(value[key]!);
  return copy;
}

function replaceAll(bytes: Uint8Array, from: Uint8Array, to: Uint8Array): Uint8Array {
  const out = Uint8Array.from(bytes);
  for (let i = 0; i + from.length <= out.length; i++) {
    if (from.every((byte, j) => out[i + j] === byte)) out.set(to, i);
  }
  return out;
}

async function sendConnect(
  transport: "connect" | "grpc-web",
  baseUrl: string,
  method: string,
  request: Message,
  token?: string,
): Promise<CallResult> {
  const options = { baseUrl, httpVersion: "1.1" as const, useBinaryFormat: true };
  const client = createClient(
    RegistryService,
    transport === "connect" ? createConnectTransport(options) : createGrpcWebTransport(options),
  ) as unknown as Record<string, (request: unknown, options: unknown) => Promise<unknown>>;
  try {
    const body = await client[lowerFirst(method)]!(request, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    return { code: "ok", body, message: "", fields: [] };
  } catch (error) {
    return failure(error);
  }
}

const GrpcClient = grpcJsClientConstructor(RegistryService);

function sendGrpc(baseUrl: string, method: string, request: Message, token?: string): Promise<CallResult> {
  const client = new GrpcClient(new URL(baseUrl).host, grpc.credentials.createInsecure()) as any;
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set("authorization", `Bearer ${token}`);
  return new Promise((resolve, reject) => {
    client[method](request, metadata, (error: grpc.ServiceError | null, body: unknown) => {
      client.close();
      if (error === null) resolve({ code: "ok", body, message: "", fields: [] });
      else {
        try {
          resolve(failure(error));
        } catch (unexpected) {
          reject(unexpected);
        }
      }
    });
  });
}

function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}
