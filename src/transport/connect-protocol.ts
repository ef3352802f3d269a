import type { Message } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { rpcName } from "./call-observation.js";
import { ACCEPT_ENCODING, decompress, negotiateEncoding, type Encoding } from "./compression.js";
import { answerConditionally } from "./http-caching.js";
import type { HttpExchange } from "./http-exchange.js";
import { addHeaders, addMetadata, errorOf, requestEncoding, sendBody, UnsupportedEncodingError } from "./rpc-answers.js";
import type { RpcContext } from "./rpc-context.js";
import { codeName, httpStatusOf } from "./status-codes.js";
import { beforeDeadline, deadlineOf } from "./timeouts.js";
import type { UnaryOutcome } from "./unary-invoker.js";
import { hasNoSideEffects, type UnaryMethod } from "./unary-method.js";

/**
 * Connect's unary protocol (connectrpc.com/docs/protocol): POST with the message as the body, or
 * GET with it in the query for methods marked NO_SIDE_EFFECTS, so browsers and CDNs can cache
 * them. JSON or binary, with HTTP's content codings; errors are JSON bodies with the code's HTTP
 * status, and trailers travel as "trailer-" headers.
 */

/** Whether a content type is one of Connect's unary ones (JSON or binary), and which. */
export function connectUnaryCodec(contentType: string | undefined): "json" | "proto" | undefined {
  if (contentType === undefined) return undefined;
  const type = contentType.toLowerCase();
  if (type === "application/proto") return "proto";
  if (type === "application/json" || /^application\/json; ?charset=utf-?8$/.test(type)) return "json";
  return undefined;
}

export async function serveConnectUnary(rpc: RpcContext, exchange: HttpExchange, target: UnaryMethod): Promise<void> {
  const observation = exchange.observation;
  observation.protocol = "connect";
  observation.method = rpcName(target.method);
  const isGet = exchange.method === "GET";
  // Connect allows GET for NO_SIDE_EFFECTS methods only.
  if (isGet && !hasNoSideEffects(target)) {
    observation.code = "unimplemented";
    exchange.respond(405, { allow: "POST", "content-type": "application/json" }, errorBody(unimplementedGet()));
    return;
  }
  const query = isGet ? new URLSearchParams(exchange.query) : undefined;
  const codec = query === undefined ? connectUnaryCodec(exchange.header("content-type")) : getCodec(query);
  if (codec === undefined) {
    exchange.respond(415, { "accept-post": "application/json, application/proto" });
    return;
  }
  const responseEncoding = negotiateEncoding(exchange.header("accept-encoding"));
  let outcome: UnaryOutcome;
  try {
    const deadline = deadlineOf("connect", exchange.header("connect-timeout-ms"), observation.startedAt);
    const input = await beforeDeadline(readInput(rpc, exchange, target, codec, query), deadline);
    outcome = await rpc.invoke(target, input, { exchange, protocolName: "connect", deadline });
  } catch (error) {
    outcome = { ok: false as const, error: errorOf(error, rpc.mapError) };
  }
  observation.code = outcome.ok ? "ok" : codeName(outcome.error.code);
  if (exchange.done) return;
  if (!outcome.ok) {
    const headers = addMetadata(addHeaders({}, outcome.header), outcome.error.metadata);
    addHeaders(headers, outcome.trailer, "trailer-");
    if (outcome.error instanceof UnsupportedEncodingError) headers["accept-encoding"] = ACCEPT_ENCODING;
    await sendBody(exchange, httpStatusOf(outcome.error.code), headers, errorBody(outcome.error), "application/json", responseEncoding);
    return;
  }
  const headers = addHeaders(addHeaders({}, outcome.header), outcome.trailer, "trailer-");
  const body =
    codec === "proto"
      ? rpc.codec.writeBinary(target.method.output, outcome.message)
      : rpc.codec.writeJson(target.method.output, outcome.message);
  if (isGet && answerConditionally(exchange, headers, body)) return;
  await sendBody(exchange, 200, headers, body, codec === "proto" ? "application/proto" : "application/json", responseEncoding);
}

function getCodec(query: URLSearchParams): "json" | "proto" | undefined {
  const encoding = query.get("encoding");
  return encoding === "json" || encoding === "proto" ? encoding : undefined;
}

/** The request message: a GET's from its query, a POST's from its body. */
async function readInput(
  rpc: RpcContext,
  exchange: HttpExchange,
  target: UnaryMethod,
  codec: "json" | "proto",
  query: URLSearchParams | undefined,
): Promise<Message> {
  if (query !== undefined) {
    const encoding = requestEncoding("compression", query.get("compression"));
    const text = query.get("message") ?? "";
    const bytes = query.get("base64") === "1" ? Buffer.from(text, "base64url") : Buffer.from(text, "utf8");
    if (bytes.byteLength > rpc.maxBodyBytes)
      throw new ConnectError(`message: must be at most ${rpc.maxBodyBytes} bytes`, Code.ResourceExhausted);
    return decodeMessage(rpc, target, codec, bytes, encoding);
  }
  const encoding = requestEncoding("content-encoding", exchange.header("content-encoding"));
  const bytes = await exchange.readBody(rpc.maxBodyBytes);
  return decodeMessage(rpc, target, codec, bytes, encoding);
}

async function decodeMessage(
  rpc: RpcContext,
  target: UnaryMethod,
  codec: "json" | "proto",
  body: Uint8Array,
  encoding: Encoding | undefined,
): Promise<Message> {
  const bytes = encoding === undefined ? body : await decompress(encoding, body, rpc.maxBodyBytes);
  if (codec === "proto") return rpc.codec.readBinary(target.method.input, bytes);
  // An empty JSON body is the empty message, as Connect's own clients send for GET-less calls.
  return rpc.codec.readJson(target.method.input, bytes.byteLength === 0 ? EMPTY_JSON_OBJECT : bytes);
}

const EMPTY_JSON_OBJECT = Buffer.from("{}");

function unimplementedGet(): ConnectError {
  return new ConnectError("this method has side effects: call it with POST", Code.Unimplemented);
}

/** Connect's error body, as Connect writes it: code name, message and details (type name, base64 value). */
export function errorBody(error: ConnectError): Uint8Array {
  return errorToJsonBytes(error, {});
}
