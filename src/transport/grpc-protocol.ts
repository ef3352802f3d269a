import type { Message } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { rpcName } from "./call-observation.js";
import { ACCEPT_ENCODING, compress, COMPRESS_MIN_BYTES, decompress, negotiateEncoding, type Encoding } from "./compression.js";
import { COMPRESSED_FLAG, decodeSingleEnvelope, encodeEnvelope, TRAILER_FLAG } from "./envelope.js";
import type { HttpExchange, ResponseHeaders } from "./http-exchange.js";
import { addHeaders, addMetadata, errorOf, requestEncoding } from "./rpc-answers.js";
import type { RpcContext } from "./rpc-context.js";
import { codeName } from "./status-codes.js";
import { beforeDeadline, deadlineOf } from "./timeouts.js";
import type { UnaryOutcome } from "./unary-invoker.js";
import type { UnaryMethod } from "./unary-method.js";

/**
 * gRPC over HTTP/2 (github.com/grpc/grpc: doc/PROTOCOL-HTTP2.md) and gRPC-Web
 * (doc/PROTOCOL-WEB.md), unary calls. Both frame the message in a 5-byte envelope and end with a
 * status: gRPC in HTTP/2 trailers (or, for an error before any message, in the headers alone:
 * "trailers-only"), gRPC-Web in a last envelope flagged as trailers, since browsers cannot read
 * HTTP trailers. gRPC-Web's text variant base64-encodes the whole body both ways.
 */

export interface GrpcVariant {
  readonly web: boolean;
  readonly text: boolean;
  readonly codec: "proto" | "json";
  /** The content type to answer with: the one asked for. */
  readonly contentType: string;
}

/**
 * gRPC, gRPC-Web and gRPC-Web text in one match, on every request. Not Connect's two
 * parseContentType functions (one per protocol): each returns a new object per call, and they
 * refuse media-type parameters other than a JSON charset, which this match lets through.
 */
const CONTENT_TYPE = /^application\/grpc(-web(-text)?)?(?:\+(proto|json))?(?:;.*)?$/;

/** Which gRPC variant a content type names, if any (gRPC-Web text carries protobuf only). */
export function grpcVariant(contentType: string | undefined): GrpcVariant | undefined {
  if (contentType === undefined) return undefined;
  const match = CONTENT_TYPE.exec(contentType.toLowerCase());
  if (match === null) return undefined;
  const codec = match[3] === "json" ? "json" : "proto";
  if (match[2] !== undefined && codec === "json") return undefined;
  return { web: match[1] !== undefined, text: match[2] !== undefined, codec, contentType: contentType.split(";")[0] as string };
}

export async function serveGrpcUnary(rpc: RpcContext, exchange: HttpExchange, target: UnaryMethod, variant: GrpcVariant): Promise<void> {
  const responseEncoding = negotiateEncoding(exchange.header("grpc-accept-encoding"));
  const protocolName = variant.web ? "grpc-web" : "grpc";
  const observation = exchange.observation;
  observation.protocol = protocolName;
  observation.method = rpcName(target.method);
  let outcome: UnaryOutcome;
  try {
    const deadline = deadlineOf("grpc", exchange.header("grpc-timeout"), observation.startedAt);
    const input = await beforeDeadline(readInput(rpc, exchange, target, variant), deadline);
    outcome = await rpc.invoke(target, input, { exchange, protocolName, deadline });
  } catch (error) {
    outcome = { ok: false as const, error: errorOf(error, rpc.mapError) };
  }
  observation.code = outcome.ok ? "ok" : codeName(outcome.error.code);
  if (exchange.done) return;
  const headers: ResponseHeaders = addHeaders(
    { "content-type": variant.contentType, "grpc-accept-encoding": ACCEPT_ENCODING },
    outcome.header,
  );
  if (!outcome.ok) {
    const status = addMetadata(addHeaders({}, outcome.trailer), outcome.error.metadata);
    statusFields(status, outcome.error);
    if (variant.web) respondWeb(exchange, variant, headers, [], status);
    // Trailers-only: an error before any message is all headers, ending the stream.
    else exchange.respond(200, { ...headers, ...status });
    return;
  }
  const payload =
    variant.codec === "proto"
      ? rpc.codec.writeBinary(target.method.output, outcome.message)
      : rpc.codec.writeJson(target.method.output, outcome.message);
  const message = await envelopeOf(payload, responseEncoding);
  if (message.encoding !== undefined) headers["grpc-encoding"] = message.encoding;
  const trailers = addHeaders({ "grpc-status": "0" }, outcome.trailer);
  if (variant.web && outcome.trailer === undefined && !variant.text) exchange.respond(200, headers, webBodyWithOk(message.frame));
  else if (variant.web) respondWeb(exchange, variant, headers, [message.frame], trailers);
  else exchange.respond(200, headers, message.frame, trailers);
}

/** Frames of answers whose bytes are shared (a cached entry's), made once per bytes object. */
const frames = new WeakMap<Uint8Array, Buffer>();

async function envelopeOf(payload: Uint8Array, encoding: Encoding | undefined): Promise<{ frame: Buffer; encoding?: Encoding }> {
  if (encoding === undefined || payload.byteLength < COMPRESS_MIN_BYTES) {
    let frame = frames.get(payload);
    if (frame === undefined) frames.set(payload, (frame = encodeEnvelope(0, payload)));
    return { frame };
  }
  return { frame: encodeEnvelope(COMPRESSED_FLAG, await compress(encoding, payload)), encoding };
}

/** The trailer frame of a call that succeeded and set no trailers of its own. */
const OK_TRAILER_FRAME = encodeEnvelope(TRAILER_FLAG, Buffer.from("grpc-status: 0\r\n", "latin1"));
const webBodies = new WeakMap<Buffer, Buffer>();

/** A gRPC-Web body of one message frame and a plain OK: remembered per (shared) frame. */
function webBodyWithOk(frame: Buffer): Buffer {
  let body = webBodies.get(frame);
  if (body === undefined) webBodies.set(frame, (body = Buffer.concat([frame, OK_TRAILER_FRAME])));
  return body;
}

/**
 * gRPC-Web's answer: the message frames, then the trailers as a flagged frame of header lines.
 * Not Connect's trailerSerialize, which takes a Headers object: the answer's trailers are a plain one.
 */
function respondWeb(exchange: HttpExchange, variant: GrpcVariant, headers: ResponseHeaders, frames: Buffer[], trailers: ResponseHeaders) {
  const lines = Object.entries(trailers)
    .map(([name, value]) => `${name}: ${String(value)}\r\n`)
    .join("");
  const body = Buffer.concat([...frames, encodeEnvelope(TRAILER_FLAG, Buffer.from(lines, "latin1"))]);
  exchange.respond(200, headers, variant.text ? Buffer.from(body.toString("base64"), "latin1") : body);
}

/** The request message, from the body's one frame. */
async function readInput(rpc: RpcContext, exchange: HttpExchange, target: UnaryMethod, variant: GrpcVariant): Promise<Message> {
  const encoding = requestEncoding("grpc-encoding", exchange.header("grpc-encoding"));
  const body = await exchange.readBody(variant.text ? Math.ceil((rpc.maxBodyBytes * 4) / 3) + 8 : rpc.maxBodyBytes + 5);
  return decodeBody(rpc, target, variant, body, encoding);
}

async function decodeBody(
  rpc: RpcContext,
  target: UnaryMethod,
  variant: GrpcVariant,
  received: Buffer,
  encoding: Encoding | undefined,
): Promise<Message> {
  const body = variant.text ? decodeBase64Chunks(received) : received;
  const envelope = decodeSingleEnvelope(body);
  if ("error" in envelope) throw new ConnectError(`body: ${envelope.error}`, Code.InvalidArgument);
  let payload: Uint8Array = envelope.payload;
  if ((envelope.flags & COMPRESSED_FLAG) !== 0) {
    if (encoding === undefined)
      throw new ConnectError("body: the message is flagged compressed but grpc-encoding names no coding", Code.InvalidArgument);
    payload = await decompress(encoding, payload, rpc.maxBodyBytes);
  } else if (payload.byteLength > rpc.maxBodyBytes) {
    throw new ConnectError(`body: must be at most ${rpc.maxBodyBytes} bytes`, Code.ResourceExhausted);
  }
  return variant.codec === "proto" ? rpc.codec.readBinary(target.method.input, payload) : rpc.codec.readJson(target.method.input, payload);
}

/**
 * gRPC-Web text bodies may be several base64 strings one after another, each padded (clients
 * encode each write separately); node's decoder stops at the first padding, so each is decoded alone.
 */
function decodeBase64Chunks(body: Buffer): Buffer {
  const text = body.toString("latin1").replace(/\s+/g, "");
  const chunks = text.split(/(?<==)(?=[^=])/);
  const wellFormed =
    /^[A-Za-z0-9+/=]*$/.test(text) && chunks.every((chunk, index) => index === chunks.length - 1 || chunk.length % 4 === 0);
  if (!wellFormed) throw new ConnectError("body: is not base64, as application/grpc-web-text requires", Code.InvalidArgument);
  return chunks.length === 1 ? Buffer.from(text, "base64") : Buffer.concat(chunks.map((chunk) => Buffer.from(chunk, "base64")));
}

/**
 * The status of an error as gRPC headers: code, percent-encoded message, and its details as a
 * google.rpc.Status in unpadded base64, as Connect's setTrailerStatus writes them. Of what that
 * writes, the error's metadata is left out (addMetadata filters it) and the message is encoded
 * here: Connect uses encodeURIComponent, and grpc-js decodes with decodeURI, which would leave
 * "%3A" and "%40" in the text a person reads; only what the spec requires is encoded here.
 */
function statusFields(target: ResponseHeaders, error: ConnectError): void {
  const status = setTrailerStatus(new Headers(), error);
  target["grpc-status"] = status.get("grpc-status") as string;
  target["grpc-message"] = percentEncode(error.rawMessage);
  const details = status.get("grpc-status-details-bin");
  if (details !== null) target["grpc-status-details-bin"] = details;
}

/** grpc-message's encoding: UTF-8, with bytes outside printable ASCII and "%" as %XX. */
function percentEncode(message: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(message)) return message;
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** An unknown method path called with gRPC or gRPC-Web: unimplemented, as those clients read it. */
export function answerGrpcUnimplemented(exchange: HttpExchange, variant: GrpcVariant, path: string): void {
  const status: ResponseHeaders = {};
  statusFields(status, new ConnectError(`${path} is not a method this server implements`, Code.Unimplemented));
  exchange.observation.protocol = variant.web ? "grpc-web" : "grpc";
  exchange.observation.code = "unimplemented";
  const headers = { "content-type": variant.contentType };
  if (variant.web) respondWeb(exchange, variant, headers, [], status);
  else exchange.respond(200, { ...headers, ...status });
}
