import * as grpc from "@grpc/grpc-js";
import { fromBinary, fromJson, toJson, type DescMessage, type DescService, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { createRegistry } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import { grpcJsClientConstructor } from "./grpc-js-client.js";

export type Protocol = "grpc" | "connect" | "grpc-web" | "rest";
export const PROTOCOLS: readonly Protocol[] = ["grpc", "connect", "grpc-web", "rest"];

/** The outcome of one call, the same shape whatever the protocol. */
export interface CallResult {
  /** "ok" or the Connect code name, e.g. "invalid_argument". */
  readonly code: string;
  /** The REST-shaped JSON body on success (an entry, or {versions}, or {entries}). */
  readonly body: any;
  readonly message: string;
  /** The field names in a google.rpc.BadRequest detail, when there is one. */
  readonly fields: readonly string[];
  /** HTTP status (REST only). */
  readonly httpStatus?: number;
}

/** The registry's operations as a client sees them, with REST-shaped inputs. */
export interface RegistryCalls {
  create(entry: Record<string, unknown>, token?: string): Promise<CallResult>;
  resolve(did: string): Promise<CallResult>;
  versions(did: string): Promise<CallResult>;
  revoke(did: string, body: { reason: string; signature: string }, token?: string): Promise<CallResult>;
  /** POST /v1/entries/{did}/lifecycle with this body. */
  lifecycle(did: string, body: Record<string, unknown>, token?: string): Promise<CallResult>;
  /** POST /v1/entries/{did}/moderation with this body. */
  moderate(did: string, body: Record<string, unknown>, token?: string): Promise<CallResult>;
  /** POST /v1/discover with this body (the request's JSON form). */
  discover(body: Record<string, unknown>): Promise<CallResult>;
  /** POST /v1/discover/ql with this body. */
  query(body: Record<string, unknown>): Promise<CallResult>;
}

export function registryClient(protocol: Protocol, baseUrl: string): RegistryCalls & { close(): void } {
  if (protocol === "rest") return { ...restCalls(baseUrl), close() {} };
  const rpc = protocol === "grpc" ? grpcJsInvoker(RegistryService, baseUrl) : connectInvoker(RegistryService, protocol, baseUrl);
  const call = async (method: string, request: Record<string, unknown>, token: string | undefined, pick: (o: any) => any) => {
    try {
      return ok(pick(await rpc.invoke(method, request, token)));
    } catch (error) {
      return failure(error);
    }
  };
  return {
    create: (entry, token) => call("CreateEntry", { entry }, token, (o) => o.entry),
    resolve: (did) => call("ResolveEntry", { did }, undefined, (o) => o.entry),
    versions: (did) => call("ListEntryVersions", { did }, undefined, (o) => o),
    revoke: (did, body, token) => call("RevokeEntry", { did, ...body }, token, (o) => o),
    lifecycle: (did, body, token) => call("ChangeLifecycle", { did, ...body }, token, (o) => o),
    moderate: (did, body, token) => call("ModerateEntry", { did, ...body }, token, (o) => o),
    discover: (body) => call("DiscoverEntries", body, undefined, (o) => o),
    query: (body) => call("QueryEntries", body, undefined, (o) => o),
    close: () => rpc.close(),
  };
}

interface Invoker {
  invoke(method: string, request: Record<string, unknown>, token?: string): Promise<any>;
  close(): void;
}

/**
 * Any unary method of `service` on an RPC protocol, with the request and answer in their JSON
 * forms (every field present) and failures as CallResults.
 */
export function rpcCaller(service: DescService, protocol: Exclude<Protocol, "rest">, baseUrl: string) {
  const rpc = protocol === "grpc" ? grpcJsInvoker(service, baseUrl) : connectInvoker(service, protocol, baseUrl);
  return {
    call: (method: string, request: Record<string, unknown>): Promise<CallResult> => rpc.invoke(method, request).then(ok, failure),
    close: () => rpc.close(),
  };
}

function connectInvoker(service: DescService, protocol: "connect" | "grpc-web", baseUrl: string): Invoker {
  const transport =
    protocol === "connect"
      ? createConnectTransport({ baseUrl, httpVersion: "1.1" })
      : createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  const client = createClient(service, transport) as unknown as Record<string, (req: unknown, opts: unknown) => Promise<any>>;
  return {
    async invoke(method, request, token) {
      const desc = service.methods.find((m) => m.name === method) as { input: DescMessage; output: DescMessage };
      const message = fromJson(desc.input, request as JsonValue);
      const headers = token === undefined ? undefined : { authorization: `Bearer ${token}` };
      const response = await client[lowerFirst(method)]!(message, { headers });
      return toJson(desc.output, response, { alwaysEmitImplicit: true });
    },
    close() {},
  };
}

/** A @grpc/grpc-js client for a protobuf-es service, with no proto-loader: codecs come from the descriptors. */
function grpcJsInvoker(service: DescService, baseUrl: string): Invoker {
  const Client = grpcJsClientConstructor(service);
  const client = new Client(new URL(baseUrl).host, grpc.credentials.createInsecure()) as any;
  return {
    invoke(method, request, token) {
      const desc = service.methods.find((m) => m.name === method) as { input: DescMessage; output: DescMessage };
      const metadata = new grpc.Metadata();
      if (token !== undefined) metadata.set("authorization", `Bearer ${token}`);
      const message = fromJson(desc.input, request as JsonValue);
      return new Promise((resolve, reject) => {
        client[method](message, metadata, (error: grpc.ServiceError | null, response: any) => {
          if (error !== null) reject(error);
          else resolve(toJson(desc.output, response, { alwaysEmitImplicit: true }));
        });
      });
    },
    close: () => client.close(),
  };
}

function restCalls(baseUrl: string): RegistryCalls {
  const send = async (method: string, path: string, body?: unknown, token?: string): Promise<CallResult> => {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const response = await fetch(baseUrl + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json: any = await response.json();
    if (response.ok) return { ...ok(json), httpStatus: response.status };
    const fields = (json.details ?? []).flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field));
    return { code: json.code, body: json, message: json.message, fields, httpStatus: response.status };
  };
  const path = (did: string) => `/v1/entries/${encodeURIComponent(did)}`;
  return {
    create: (entry, token) => send("POST", "/v1/entries", entry, token),
    resolve: (did) => send("GET", path(did)),
    versions: (did) => send("GET", `${path(did)}/versions`),
    revoke: (did, body, token) => send("DELETE", path(did), body, token),
    lifecycle: (did, body, token) => send("POST", `${path(did)}/lifecycle`, body, token),
    moderate: (did, body, token) => send("POST", `${path(did)}/moderation`, body, token),
    discover: (body) => send("POST", "/v1/discover", body),
    query: (body) => send("POST", "/v1/discover/ql", body),
  };
}

function ok(body: any): CallResult {
  return { code: "ok", body, message: "", fields: [] };
}

const GRPC_CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([name, v]) => [v, snake(name)]),
);

export function failure(error: unknown): CallResult {
  if (error instanceof ConnectError) {
    const fields = error.findDetails(BadRequestSchema).flatMap((d: any) => d.fieldViolations.map((v: any) => v.field));
    return { code: GRPC_CODE_NAMES[error.code] ?? "unknown", body: undefined, message: error.rawMessage, fields };
  }
  const grpcError = error as grpc.ServiceError;
  if (typeof grpcError.code === "number") {
    const raw = grpcError.metadata?.get("grpc-status-details-bin")?.[0];
    const fields = raw === undefined ? [] : badRequestFieldsFromStatus(raw as Buffer);
    return { code: GRPC_CODE_NAMES[grpcError.code] ?? "unknown", body: undefined, message: grpcError.details, fields };
  }
  throw error;
}

function badRequestFieldsFromStatus(bytes: Buffer): string[] {
  const status = fromBinary(StatusSchema, bytes);
  const registry = createRegistry(BadRequestSchema);
  return status.details.flatMap((any) => {
    const detail = anyUnpack(any, registry) as any;
    return detail?.fieldViolations?.map((v: any) => v.field) ?? [];
  });
}

function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

function snake(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}
