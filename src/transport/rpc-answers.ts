import { Code, ConnectError } from "@connectrpc/connect";
import { compressOnce, COMPRESS_MIN_BYTES, DecompressionError, isSupportedEncoding, type Encoding } from "./compression.js";
import { codedEntityTag } from "./http-caching.js";
import { BodyTooLargeError, type HttpExchange, type ResponseHeaders } from "./http-exchange.js";
import type { ErrorMapper } from "./rpc-context.js";

/**
 * Pieces every protocol's answer is made of: headers and trailers as plain objects, errors
 * from anything a request can fail with, and optional compression.
 */

/** Copies a Headers object into plain response headers, `prefix` before each name. */
export function addHeaders(target: ResponseHeaders, source: Headers | undefined, prefix = ""): ResponseHeaders {
  source?.forEach((value, name) => {
    target[prefix + name] = value;
  });
  return target;
}

/**
 * Headers an error's metadata may not set: the protocols' own (grpc-*, connect-*) and those that
 * frame the answer, which the server sets from what it sends.
 */
const FRAMING_HEADERS = new Set([
  "accept-encoding",
  "connection",
  "content-encoding",
  "content-length",
  "content-type",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function isProtocolHeader(name: string): boolean {
  return name.startsWith("grpc-") || name.startsWith("connect-") || FRAMING_HEADERS.has(name);
}

/** Adds an error's metadata to an answer's headers or trailers, without the protocol's own. */
export function addMetadata(target: ResponseHeaders, metadata: Headers): ResponseHeaders {
  metadata.forEach((value, name) => {
    if (!isProtocolHeader(name)) target[name] = value;
  });
  return target;
}

/**
 * Any failure before or around a call as a ConnectError: a body over the limit as
 * resource_exhausted, a bad compressed body as invalid_argument, anything else through `mapError`.
 */
export function errorOf(error: unknown, mapError: ErrorMapper): ConnectError {
  if (error instanceof ConnectError) return error;
  return transportErrorOf(error) ?? mapError(error);
}

/** The ConnectError of a failure the transport itself raises (body limits, content codings), if it is one. */
export function transportErrorOf(error: unknown): ConnectError | undefined {
  if (error instanceof BodyTooLargeError) {
    return new ConnectError(`body: ${error.message}`, Code.ResourceExhausted);
  }
  if (error instanceof DecompressionError) {
    return new ConnectError(`body: ${error.message}`, error.tooLarge ? Code.ResourceExhausted : Code.InvalidArgument);
  }
  return undefined;
}

/** A request body in a coding the server does not read: unimplemented (REST: 415). */
export class UnsupportedEncodingError extends ConnectError {
  constructor(header: string, value: string) {
    super(`${header}: "${value}" is not supported; use gzip, br or identity`, Code.Unimplemented);
  }
}

/** The request's coding: none, or a supported one. */
export function requestEncoding(header: string, value: string | null | undefined): Encoding | undefined {
  if (value === undefined || value === null || value === "" || value === "identity") return undefined;
  if (isSupportedEncoding(value)) return value;
  throw new UnsupportedEncodingError(header, value);
}

/**
 * Sends a body whose compression follows HTTP's content codings (REST and Connect unary):
 * compressed in the negotiated coding when it is large enough to be worth it, with Vary so caches
 * keep the codings apart, and the ETag (if any) told apart by coding.
 */
export async function sendBody(
  exchange: HttpExchange,
  status: number,
  headers: ResponseHeaders,
  body: Uint8Array,
  contentType: string,
  encoding: Encoding | undefined,
): Promise<void> {
  headers["content-type"] = contentType;
  headers.vary = "Accept-Encoding";
  if (encoding !== undefined && body.byteLength >= COMPRESS_MIN_BYTES) {
    body = await compressOnce(encoding, body);
    headers["content-encoding"] = encoding;
    if (typeof headers.etag === "string") headers.etag = codedEntityTag(headers.etag, encoding);
  }
  exchange.respond(status, headers, body);
}
