import { COMPRESS_MIN_BYTES, compressOnce, negotiateEncoding, type Encoding } from "../transport/compression.js";
import { answerConditionally, codedEntityTag } from "../transport/http-caching.js";
import type { HttpExchange, ResponseHeaders } from "../transport/http-exchange.js";

/** Bytes served as they are, or compressed: as the build made them, or else once per coding here. */
export interface StaticBody {
  readonly bytes: Buffer;
  /** The form a build made ahead for a coding; undefined where it made none. */
  readonly builtForm?: (encoding: Encoding) => Promise<Buffer | undefined>;
}

export function staticBody(bytes: Buffer): StaticBody {
  return { bytes };
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
  const bytes = (await body.builtForm?.(encoding)) ?? (await compressOnce(encoding, body.bytes));
  answerHeaders["content-encoding"] = encoding;
  exchange.respond(status, answerHeaders, bytes);
}
