import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { createRegistry, fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import type { Transport } from "./abuse-transports.js";
import type { Outcome } from "./client-error.js";

/**
 * Requests sent byte for byte, headers and framing included, on each of the registry's protocols,
 * and their answers read back into one Outcome. The real clients cannot send what these cases
 * need: bodies of any size, framing and content type, headers with any bytes, messages that do not
 * decode. gRPC goes over HTTP/2 with prior knowledge; everything else over HTTP/1.1.
 */

export interface RawRequest {
  readonly method?: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Uint8Array | string;
  /**
   * How the body's length is told: a content-length (the default), chunked transfer coding (on
   * HTTP/2: DATA frames with no content-length), or a declared content-length whatever the bytes
   * sent, after which the request is left open.
   */
  readonly framing?: "length" | "chunked" | { readonly declared: number };
  readonly timeoutMs?: number;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
  readonly trailers: Readonly<Record<string, string | string[] | undefined>>;
}

/** Outcome plus the fields of a google.rpc.BadRequest detail, when the answer has one. */
export interface WireOutcome extends Outcome {
  readonly fields: readonly string[];
}

const DEFAULT_TIMEOUT_MS = 10_000;
const WRITE_CHUNK = 64 * 1024;

function bytesOf(body: Uint8Array | string | undefined): Buffer {
  if (body === undefined) return Buffer.alloc(0);
  return typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * One HTTP/1.1 request on a connection of its own. It resolves with the answer as soon as the
 * answer is complete, even if the server stopped reading the body (a refusal may close the
 * connection while the client still writes); it rejects if the connection ends with no answer.
 */
export function http1Request(baseUrl: string, request: RawRequest): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const body = bytesOf(request.body);
  const framing = request.framing ?? "length";
  const headers: Record<string, string> = { ...request.headers };
  if (framing === "length") headers["content-length"] = String(body.length);
  else if (framing === "chunked") headers["transfer-encoding"] = "chunked";
  else headers["content-length"] = String(framing.declared);
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    let answered = false;
    const outgoing = http.request(
      { host: url.hostname, port: url.port, method: request.method ?? "POST", path: request.path, headers, agent: false },
      (response) => {
        answered = true;
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks),
            trailers: response.trailers,
          });
          outgoing.destroy();
        });
        response.on("close", () => {
          if (!response.complete) reject(new Error("the connection closed in the middle of the answer"));
        });
      },
    );
    outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    // Writing on after the server answered and closed fails (EPIPE, ECONNRESET): the answer counts.
    outgoing.on("error", (error) => {
      if (!answered) reject(error);
    });
    writeBody(outgoing, body, framing);
  });
}

function writeBody(sink: http.ClientRequest | http2.ClientHttp2Stream, body: Buffer, framing: NonNullable<RawRequest["framing"]>): void {
  if (typeof framing === "object") {
    sink.write(body);
    return;
  }
  for (let at = 0; at < body.length; at += WRITE_CHUNK) sink.write(body.subarray(at, at + WRITE_CHUNK));
  sink.end();
}

/** One HTTP/2 request (prior knowledge) on a session of its own, with the same rules as http1Request. */
export function http2Request(baseUrl: string, request: RawRequest): Promise<RawResponse> {
  const body = bytesOf(request.body);
  const framing = request.framing ?? "length";
  const headers: http2.OutgoingHttpHeaders = { ":method": request.method ?? "POST", ":path": request.path, ...request.headers };
  if (framing === "length") headers["content-length"] = body.length;
  else if (typeof framing === "object") headers["content-length"] = framing.declared;
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    let responseHeaders: http2.IncomingHttpHeaders | undefined;
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session.destroy();
      outcome();
    };
    const timer = setTimeout(() => settle(() => reject(new Error(`no answer within ${timeoutMs} ms`))), timeoutMs);
    const answer = () => {
      const received = responseHeaders;
      if (received === undefined) return false;
      settle(() => resolve({ status: Number(received[":status"]), headers: received, body: Buffer.concat(chunks), trailers }));
      return true;
    };
    session.on("error", (error) => settle(() => reject(error)));
    const stream = session.request(headers);
    stream.on("response", (received) => (responseHeaders = received));
    stream.on("trailers", (received) => (trailers = received));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", answer);
    // A refusal may end the stream with RST_STREAM(NO_ERROR) after a complete answer.
    stream.on("close", () => {
      if (!answer()) settle(() => reject(new Error(`the stream closed with no answer (RST_STREAM code ${stream.rstCode})`)));
    });
    stream.on("error", () => {
      // Reported through "close", with what was received by then.
    });
    writeBody(stream, body, framing);
  });
}

/**
 * Bytes written to a fresh connection as they are, for requests node's client refuses to write
 * (non-ASCII bytes in the request line or a header). Resolves with the answer's status line code
 * and its JSON body if it has one, once the server closes or answers with a complete body.
 */
export function rawSocketRequest(
  baseUrl: string,
  bytes: Buffer,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<{ status: number; body: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const finish = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      const text = received.toString("latin1");
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (status === null) reject(error ?? new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 100))}`));
      else resolve({ status: Number(status[1]), body: text.slice(text.indexOf("\r\n\r\n") + 4) });
    };
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString("latin1");
      const headEnd = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headEnd));
      if (headEnd >= 0 && length !== null && received.length >= headEnd + 4 + Number(length[1])) finish();
    });
    socket.on("end", () => finish());
    socket.on("error", (error) => finish(error));
    socket.write(bytes);
  });
}

/** A gRPC length-prefixed message frame. */
export function envelope(payload: Uint8Array, flags = 0): Buffer {
  const frame = Buffer.alloc(5 + payload.length);
  frame[0] = flags;
  frame.writeUInt32BE(payload.length, 1);
  frame.set(payload, 5);
  return frame;
}

/** The registry's methods as the abuse cases call them. */
export type RegistryMethod = "CreateEntry" | "ResolveEntry" | "ListEntryVersions" | "RevokeEntry" | "DiscoverEntries" | "QueryEntries";

export const RPC_PATH = (method: RegistryMethod): string => `/${RegistryService.typeName}/${method}`;

const REST_ROUTES: Partial<Record<RegistryMethod, { method: string; path: string }>> = {
  CreateEntry: { method: "POST", path: "/v1/entries" },
  DiscoverEntries: { method: "POST", path: "/v1/discover" },
  QueryEntries: { method: "POST", path: "/v1/discover/ql" },
};

/** Each transport's content type for a request message. */
export const CONTENT_TYPES: Readonly<Record<Transport, string>> = {
  rest: "application/json",
  "connect-json": "application/json",
  connect: "application/proto",
  "grpc-web": "application/grpc-web+proto",
  grpc: "application/grpc",
};

export interface RpcBody {
  /** For rest: the route's body text; for connect-json: the request message's JSON text; else the message's protobuf bytes. */
  readonly body: Uint8Array | string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly framing?: RawRequest["framing"];
  /** Replaces the transport's content type (null: none is sent). */
  readonly contentType?: string | null;
  /** Sends a REST, Connect or gRPC-Web call over HTTP/2 with prior knowledge (gRPC always is). */
  readonly http2?: boolean;
}

/**
 * Calls `method` on `transport` with exactly these bytes as the message (framed in an envelope
 * where the protocol wants one), and reads the answer. REST takes the POST route of the method.
 */
export async function callRaw(transport: Transport, baseUrl: string, method: RegistryMethod, call: RpcBody): Promise<WireOutcome> {
  const headers: Record<string, string> = { ...call.headers };
  const contentType = call.contentType === undefined ? CONTENT_TYPES[transport] : call.contentType;
  if (contentType !== null) headers["content-type"] = contentType;
  const framed = transport === "grpc" || transport === "grpc-web" ? envelope(bytesOf(call.body)) : call.body;
  if (transport === "grpc") {
    headers.te = "trailers";
    return outcomeOf(transport, await http2Request(baseUrl, { path: RPC_PATH(method), headers, body: framed, framing: call.framing }));
  }
  let route = { method: "POST", path: RPC_PATH(method) };
  if (transport === "rest") {
    const rest = REST_ROUTES[method];
    if (rest === undefined) throw new Error(`${method} has no POST route`);
    route = rest;
  }
  const send = call.http2 === true ? http2Request : http1Request;
  return outcomeOf(transport, await send(baseUrl, { ...route, headers, body: framed, framing: call.framing }));
}

const CODE_NAMES = new Map<number, string>(
  Object.entries(Code)
    .filter(([, value]) => typeof value === "number")
    .map(([name, value]) => [value as number, name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase()]),
);

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** Reads an answer the way a client of `transport` would. */
export function outcomeOf(transport: Transport, response: RawResponse): WireOutcome {
  if (transport === "grpc" || transport === "grpc-web") return grpcOutcome(transport, response);
  return httpOutcome(response);
}

/** REST and Connect: the HTTP status, and a JSON error body {code, message, details}. */
export function httpOutcome(response: RawResponse): WireOutcome {
  const { status } = response;
  if (status >= 200 && status < 300) return { code: "ok", httpStatus: status, fields: [] };
  const json = /json/.test(single(response.headers["content-type"]) ?? "") ? parseJsonOrUndefined(response.body) : undefined;
  if (json === undefined || typeof json.code !== "string") {
    return { code: `http_${status}`, httpStatus: status, message: response.body.toString("utf8").slice(0, 200), fields: [] };
  }
  const fields = (Array.isArray(json.details) ? json.details : []).flatMap((detail: any) => {
    // REST writes details in their JSON form; Connect as {type, value: base64 of the binary form}.
    if (Array.isArray(detail?.fieldViolations)) return detail.fieldViolations.map((v: any) => String(v.field));
    if (detail?.type === BadRequestSchema.typeName && typeof detail.value === "string") {
      return fromBinary(BadRequestSchema, Buffer.from(detail.value, "base64")).fieldViolations.map((v) => v.field);
    }
    return [];
  });
  return { code: json.code, httpStatus: status, message: String(json.message ?? ""), fields };
}

function parseJsonOrUndefined(body: Buffer): any {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** gRPC and gRPC-Web: grpc-status from the headers (trailers-only), the trailers, or gRPC-Web's trailer frame. */
function grpcOutcome(transport: "grpc" | "grpc-web", response: RawResponse): WireOutcome {
  const status: Record<string, string | undefined> = {};
  const take = (source: RawResponse["headers"]) => {
    for (const name of ["grpc-status", "grpc-message", "grpc-status-details-bin"]) status[name] ??= single(source[name]);
  };
  take(response.headers);
  take(response.trailers);
  if (transport === "grpc-web" && status["grpc-status"] === undefined) take(webTrailers(response.body));
  const number = status["grpc-status"];
  if (number === undefined) {
    // No gRPC answer at all: what the HTTP status says is all there is.
    return {
      code: `http_${response.status}`,
      httpStatus: response.status,
      message: response.body.toString("utf8").slice(0, 200),
      fields: [],
    };
  }
  const code = number === "0" ? "ok" : (CODE_NAMES.get(Number(number)) ?? `grpc_status_${number}`);
  const details = status["grpc-status-details-bin"];
  return {
    code,
    ...(response.status === 200 ? {} : { httpStatus: response.status }),
    message: decodeURIComponent(status["grpc-message"] ?? ""),
    fields: details === undefined ? [] : badRequestFields(Buffer.from(details, "base64")),
  };
}

/** The trailer block of a gRPC-Web body: its last frame, flagged 0x80, of "name: value" lines. */
function webTrailers(body: Buffer): Record<string, string> {
  const trailers: Record<string, string> = {};
  for (let at = 0; at + 5 <= body.length; ) {
    const length = body.readUInt32BE(at + 1);
    if (((body[at] as number) & 0x80) !== 0) {
      for (const line of body
        .subarray(at + 5, at + 5 + length)
        .toString("latin1")
        .split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) trailers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
    }
    at += 5 + length;
  }
  return trailers;
}

const DETAIL_TYPES = createRegistry(BadRequestSchema);

function badRequestFields(statusBytes: Uint8Array): string[] {
  return fromBinary(StatusSchema, statusBytes).details.flatMap((any) => {
    const detail = anyUnpack(any, DETAIL_TYPES) as { fieldViolations?: { field: string }[] } | undefined;
    return detail?.fieldViolations?.map((v) => v.field) ?? [];
  });
}
