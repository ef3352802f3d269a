import { compress, COMPRESS_MIN_BYTES, negotiateEncoding, type Encoding } from "../transport/compression.js";
import { answerConditionally, codedEntityTag } from "../transport/http-caching.js";
import type { HttpExchange, ResponseHeaders } from "../transport/http-exchange.js";

/** Bytes served as they are, with their compressed forms made once per coding. */
export interface StaticBody {
  readonly bytes: Buffer;
  readonly coded: Map<Encoding, Promise<Buffer>>;
}

export function staticBody(bytes: Buffer): StaticBody {
  return { bytes, coded: new Map() };
}

/** Formats that are compressed already (PNG), which a second compression would only slow. */
const PRECOMPRESSED_TYPES = new Set(["image/png", "font/woff2"]);

/**
 * Answers with `body` under an ETag (304 when the client holds it), compressed as the client
 * accepts. Static files of the API's docs and of the explorer are served this one way.
 */
export async function answerStatic(exchange: HttpExchange, status: number, headers: ResponseHeaders, body: StaticBody): Promise<void> {
  const answerHeaders: ResponseHeaders = { ...headers, vary: "Accept-Encoding" };
  if (status === 200 && answerConditionally(exchange, answerHeaders, body.bytes)) return;
  const compressible = body.bytes.byteLength >= COMPRESS_MIN_BYTES && !PRECOMPRESSED_TYPES.has(String(headers["content-type"]));
  const encoding = compressible ? negotiateEncoding(exchange.header("accept-encoding")) : undefined;
  if (answerHeaders.etag !== undefined) answerHeaders.etag = codedEntityTag(answerHeaders.etag as string, encoding);
  if (encoding === undefined) {
    exchange.respond(status, answerHeaders, body.bytes);
    return;
  }
  let compressed = body.coded.get(encoding);
  if (compressed === undefined) {
    compressed = compress(encoding, body.bytes);
    body.coded.set(encoding, compressed);
  }
  answerHeaders["content-encoding"] = encoding;
  const bytes = await compressed;
  exchange.respond(status, answerHeaders, bytes);
}
