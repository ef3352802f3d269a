import * as grpc from "@grpc/grpc-js";
import { grpcJsClientConstructor } from "./grpc-js-client.js";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import type { Protocol } from "./protocol-clients.js";

/**
 * The registry's two writes with the authorization header sent exactly as given (or not at all),
 * on any protocol. protocol-clients.ts always sends "Bearer <token>"; malformed headers such as
 * "Basic x" need this.
 */
export interface RawWriteOutcome {
  /** "ok" or the Connect code name. */
  readonly code: string;
  readonly message: string;
  readonly httpStatus?: number;
}

export interface RawWriteClient {
  create(entry: Record<string, unknown>, authorization: string | undefined): Promise<RawWriteOutcome>;
  revoke(did: string, body: { reason: string; signature: string }, authorization: string | undefined): Promise<RawWriteOutcome>;
  close(): void;
}

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, value]) => typeof value === "number")
    .map(([name, value]) => [value, name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase()]),
);

export function rawWriteClient(protocol: Protocol, baseUrl: string): RawWriteClient {
  if (protocol === "rest") return restClient(baseUrl);
  if (protocol === "grpc") return grpcClient(baseUrl);
  return connectClient(protocol, baseUrl);
}

function restClient(baseUrl: string): RawWriteClient {
  const send = async (method: string, path: string, body: unknown, authorization: string | undefined) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await fetch(baseUrl + path, { method, headers, body: JSON.stringify(body) });
    const json: any = await response.json();
    return {
      code: response.ok ? "ok" : String(json.code),
      message: response.ok ? "" : String(json.message),
      httpStatus: response.status,
    };
  };
  return {
    create: (entry, authorization) => send("POST", "/v1/entries", entry, authorization),
    revoke: (did, body, authorization) => send("DELETE", `/v1/entries/${encodeURIComponent(did)}`, body, authorization),
    close() {},
  };
}

function connectClient(protocol: "connect" | "grpc-web", baseUrl: string): RawWriteClient {
  const transport =
    protocol === "connect"
      ? createConnectTransport({ baseUrl, httpVersion: "1.1" })
      : createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  const client = createClient(RegistryService, transport);
  const call = async (work: (headers: Record<string, string> | undefined) => Promise<unknown>, authorization?: string) => {
    try {
      await work(authorization === undefined ? undefined : { authorization });
      return { code: "ok", message: "" };
    } catch (error) {
      const connectError = ConnectError.from(error);
      return { code: CODE_NAMES[connectError.code] ?? "unknown", message: connectError.rawMessage };
    }
  };
  return {
    create: (entry, authorization) =>
      call(
        (headers) => client.createEntry(fromJson(RegistryService.method.createEntry.input, { entry } as JsonValue), { headers }),
        authorization,
      ),
    revoke: (did, body, authorization) =>
      call(
        (headers) => client.revokeEntry(fromJson(RegistryService.method.revokeEntry.input, { did, ...body }), { headers }),
        authorization,
      ),
    close() {},
  };
}

function grpcClient(baseUrl: string): RawWriteClient {
  const Client = grpcJsClientConstructor(RegistryService);
  const client = new Client(new URL(baseUrl).host, grpc.credentials.createInsecure()) as any;
  const call = (method: string, message: unknown, authorization: string | undefined): Promise<RawWriteOutcome> => {
    const metadata = new grpc.Metadata();
    if (authorization !== undefined) metadata.set("authorization", authorization);
    return new Promise((resolve) => {
      client[method](message, metadata, (error: grpc.ServiceError | null) => {
        if (error === null) resolve({ code: "ok", message: "" });
        else resolve({ code: CODE_NAMES[error.code] ?? "unknown", message: error.details });
      });
    });
  };
  return {
    create: (entry, authorization) =>
      call("CreateEntry", fromJson(RegistryService.method.createEntry.input, { entry } as JsonValue), authorization),
    revoke: (did, body, authorization) =>
      call("RevokeEntry", fromJson(RegistryService.method.revokeEntry.input, { did, ...body }), authorization),
    close: () => client.close(),
  };
}
