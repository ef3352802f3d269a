/**
 * The rows of the protocol comparison: for each protocol, the exact request h2load sends (method,
 * path, headers, body, HTTP/1.1 or h2c, concurrency) and how one answer is checked before the load
 * (status, content type, the body decoded down to the resolved entry's DID, gRPC status).
 */
import http from "node:http";
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ResolveEntryRequestSchema, ResolveEntryResponseSchema } from "../gen/registry/v1/registry_service_pb.js";
import { grpcEnvelope } from "./grpc-create-load.js";

export const RESOLVE_ENTRY_PATH = "/registry.v1.RegistryService/ResolveEntry";

/** Which process answers a row. */
export type Target = "registry" | "http-floor" | "http2-floor";
export type Transport = "h1" | "h2c";

export const RESOLVE_ROW_KEYS = [
  "rest",
  "connect-json-h1",
  "connect-json-h2c",
  "connect-proto-h1",
  "connect-proto-h2c",
  "grpc-web-h1",
  "grpc-web-h2c",
  "grpc",
  "floor-http",
  "floor-http2",
] as const;
export type ResolveRowKey = (typeof RESOLVE_ROW_KEYS)[number];

export interface Concurrency {
  /** HTTP/1.1 connections (one request in flight on each). */
  readonly h1Connections: number;
  readonly h2Connections: number;
  readonly h2Streams: number;
}

export interface ProtocolRow {
  readonly key: ResolveRowKey;
  readonly label: string;
  readonly target: Target;
  readonly transport: Transport;
  /** An RPC protocol: held to the "at least 0.8 of REST" target. */
  readonly rpc: boolean;
  readonly method: "GET" | "POST";
  readonly path: string;
  /** Lower-case header names, as sent by h2load (`-H 'name: value'`) and by the smoke request. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Buffer;
  /** h2load's protocol and concurrency arguments. */
  readonly shape: readonly string[];
  /** Throws unless `answer` is a successful resolve of `did`. */
  readonly check: (answer: Answer, did: string) => void;
}

export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** HTTP/2 trailers (empty over HTTP/1.1). */
  readonly trailers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

function expect(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

function expectStatus(answer: Answer, contentType: string): void {
  const type = String(answer.headers["content-type"] ?? "");
  const grpcStatus = answer.headers["grpc-status"] ?? answer.trailers["grpc-status"];
  expect(
    answer.status === 200 && type.startsWith(contentType),
    `expected 200 ${contentType}, got ${answer.status} ${type} ${grpcStatus === undefined ? "" : `grpc-status ${String(grpcStatus)} `}${answer.body.subarray(0, 300).toString()}`,
  );
}

function expectDid(found: string | undefined, did: string): void {
  expect(found === did, `the answer resolves ${found ?? "nothing"}, not ${did}`);
}

/** The messages of a gRPC / gRPC-Web body: [flags, bytes] per length-prefixed frame. */
function frames(body: Buffer): { flags: number; bytes: Buffer }[] {
  const out: { flags: number; bytes: Buffer }[] = [];
  for (let at = 0; at < body.length; ) {
    expect(body.length - at >= 5, `a truncated frame header at byte ${at} of ${body.length}`);
    const length = body.readUInt32BE(at + 1);
    expect(body.length - at - 5 >= length, `a truncated frame at byte ${at} of ${body.length}`);
    out.push({ flags: body[at]!, bytes: body.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return out;
}

function decodeResolveMessage(bytes: Uint8Array): string | undefined {
  return fromBinary(ResolveEntryResponseSchema, bytes).entry?.entryDid;
}

const checks = {
  restJson(answer: Answer, did: string) {
    expectStatus(answer, "application/json");
    expectDid((JSON.parse(answer.body.toString()) as { entryDid?: string }).entryDid, did);
  },
  connectJson(answer: Answer, did: string) {
    expectStatus(answer, "application/json");
    expectDid((JSON.parse(answer.body.toString()) as { entry?: { entryDid?: string } }).entry?.entryDid, did);
  },
  connectProto(answer: Answer, did: string) {
    expectStatus(answer, "application/proto");
    expectDid(decodeResolveMessage(answer.body), did);
  },
  grpcWeb(answer: Answer, did: string) {
    expectStatus(answer, "application/grpc-web+proto");
    const all = frames(answer.body);
    const messages = all.filter((frame) => (frame.flags & 0x80) === 0);
    const trailer = all.find((frame) => (frame.flags & 0x80) !== 0)?.bytes.toString() ?? "";
    expect(/^grpc-status:\s*0\s*$/im.test(trailer), `gRPC-Web trailers say ${JSON.stringify(trailer)}, not grpc-status 0`);
    expect(messages.length === 1, `${messages.length} response messages, not 1`);
    expectDid(decodeResolveMessage(messages[0]!.bytes), did);
  },
  grpc(answer: Answer, did: string) {
    expectStatus(answer, "application/grpc");
    const status = answer.trailers["grpc-status"];
    expect(
      status === "0",
      `grpc-status ${String(status ?? answer.headers["grpc-status"])} ${String(answer.trailers["grpc-message"] ?? answer.headers["grpc-message"] ?? "")}`,
    );
    const messages = frames(answer.body);
    expect(messages.length === 1 && messages[0]!.flags === 0, `${messages.length} response messages, not 1 uncompressed`);
    expectDid(decodeResolveMessage(messages[0]!.bytes), did);
  },
};

const CONNECT = { "connect-protocol-version": "1" };

export function protocolRows(did: string, concurrency: Concurrency): ProtocolRow[] {
  const h1 = ["--h1", "-c", String(concurrency.h1Connections)];
  const h2c = ["-c", String(concurrency.h2Connections), "-m", String(concurrency.h2Streams)];
  // As a person would type it: the DID as is, its "@" escaped.
  const restPath = `/v1/entries/${did.replace("@", "%40")}`;
  const requestBinary = Buffer.from(toBinary(ResolveEntryRequestSchema, create(ResolveEntryRequestSchema, { did })));
  const requestJson = Buffer.from(JSON.stringify({ did }));
  const post = { method: "POST" as const, path: RESOLVE_ENTRY_PATH, rpc: true, target: "registry" as const };
  const connectJson = {
    ...post,
    headers: { "content-type": "application/json", ...CONNECT },
    body: requestJson,
    check: checks.connectJson,
  };
  const connectProto = {
    ...post,
    headers: { "content-type": "application/proto", ...CONNECT },
    body: requestBinary,
    check: checks.connectProto,
  };
  const grpcWeb = {
    ...post,
    headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    body: grpcEnvelope(requestBinary),
    check: checks.grpcWeb,
  };
  // The REST resolve, asked of the registry and of the bare node:http floor alike.
  const restGet = {
    transport: "h1",
    rpc: false,
    method: "GET",
    path: restPath,
    headers: {},
    shape: h1,
    check: checks.restJson,
  } as const;
  return [
    { key: "rest", label: "REST, HTTP/1.1", target: "registry", ...restGet },
    { key: "connect-json-h1", label: "Connect JSON, HTTP/1.1", transport: "h1", shape: h1, ...connectJson },
    { key: "connect-json-h2c", label: "Connect JSON, h2c", transport: "h2c", shape: h2c, ...connectJson },
    { key: "connect-proto-h1", label: "Connect binary, HTTP/1.1", transport: "h1", shape: h1, ...connectProto },
    { key: "connect-proto-h2c", label: "Connect binary, h2c", transport: "h2c", shape: h2c, ...connectProto },
    { key: "grpc-web-h1", label: "gRPC-Web binary, HTTP/1.1", transport: "h1", shape: h1, ...grpcWeb },
    { key: "grpc-web-h2c", label: "gRPC-Web binary, h2c", transport: "h2c", shape: h2c, ...grpcWeb },
    {
      key: "grpc",
      label: "gRPC, h2c",
      transport: "h2c",
      shape: h2c,
      ...post,
      headers: { "content-type": "application/grpc", te: "trailers" },
      body: grpcEnvelope(requestBinary),
      check: checks.grpc,
    },
    { key: "floor-http", label: "floor: bare node:http, HTTP/1.1", target: "http-floor", ...restGet },
    {
      key: "floor-http2",
      label: "floor: bare node:http2 streams, h2c",
      target: "http2-floor",
      transport: "h2c",
      rpc: false,
      method: "POST",
      path: RESOLVE_ENTRY_PATH,
      headers: { "content-type": "application/grpc", te: "trailers" },
      body: grpcEnvelope(requestBinary),
      shape: h2c,
      check: checks.grpc,
    },
  ];
}

/** One request exactly as h2load sends it for `row`, over a fresh connection. */
export function smokeRequest(baseUrl: string, row: ProtocolRow): Promise<Answer> {
  // h2load sends these two on every request; the rest comes from the row.
  const headers = { accept: "*/*", "user-agent": "h2load nghttp2", ...row.headers };
  return row.transport === "h1" ? http1Request(baseUrl, row, headers) : http2Request(baseUrl, row, headers);
}

function http1Request(baseUrl: string, row: ProtocolRow, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      new URL(row.path, baseUrl),
      {
        method: row.method,
        headers: row.body === undefined ? headers : { ...headers, "content-length": String(row.body.length) },
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.once("error", reject);
        response.once("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            trailers: response.trailers,
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    request.setTimeout(10_000, () => request.destroy(new Error(`no answer from ${baseUrl}${row.path} in 10 s`)));
    request.once("error", reject);
    request.end(row.body);
  });
}

function http2Request(baseUrl: string, row: ProtocolRow, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.once("error", reject);
    session.setTimeout(10_000, () => session.destroy(new Error(`no answer from ${baseUrl}${row.path} in 10 s`)));
    const stream = session.request({ ":method": row.method, ":path": row.path, ...headers });
    let status = 0;
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.once("response", (received) => {
      status = Number(received[":status"]);
      responseHeaders = received;
    });
    stream.once("trailers", (received) => (trailers = received));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.once("error", reject);
    stream.once("close", () => {
      session.close();
      resolve({ status, headers: responseHeaders, trailers, body: Buffer.concat(chunks) });
    });
    stream.end(row.body);
  });
}

/** Checks one answer for `row`; returns its body (whose length the load's byte count is held to). */
export async function checkedAnswer(baseUrl: string, row: ProtocolRow, did: string): Promise<Answer> {
  const answer = await smokeRequest(baseUrl, row);
  try {
    row.check(answer, did);
  } catch (error) {
    throw new Error(`${row.label}: the smoke request ${row.method} ${baseUrl}${row.path} failed its check: ${(error as Error).message}`);
  }
  return answer;
}
