import { promisify } from "node:util";
import zlib from "node:zlib";

/**
 * Content codings the edge reads and writes, for every protocol: HTTP's Content-Encoding and
 * Accept-Encoding (REST and Connect unary), gRPC's grpc-encoding and grpc-accept-encoding.
 */
export type Encoding = "gzip" | "br";
export const SUPPORTED_ENCODINGS: readonly Encoding[] = ["br", "gzip"];
export const ACCEPT_ENCODING = "gzip, br";

/** Answers shorter than this go out as they are: compressing them costs more than it saves. */
export const COMPRESS_MIN_BYTES = 1024;

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);
const brotli = promisify(zlib.brotliCompress);
const unbrotli = promisify(zlib.brotliDecompress);

/**
 * Brotli's default quality (11) is meant for static files and costs tens of milliseconds a page;
 * 4 compresses API responses about as well as gzip -6, faster.
 */
const BROTLI_OPTIONS = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } };

export function isSupportedEncoding(name: string): name is Encoding {
  return name === "gzip" || name === "br";
}

/**
 * The coding to answer in, from an Accept-Encoding (or grpc-accept-encoding) list with optional
 * q-values: the client's most preferred one we support, brotli on a tie; none for identity. Not
 * Connect's compressionNegotiate, which reads no q-values ("gzip;q=0" would not refuse gzip) and
 * returns a new object for every call.
 */
export function negotiateEncoding(accept: string | undefined): Encoding | undefined {
  if (accept === undefined || accept === "") return undefined;
  let best: Encoding | undefined;
  let bestQ = 0;
  for (const item of accept.split(",")) {
    const [rawName = "", ...params] = item.split(";");
    const name = rawName.trim().toLowerCase();
    const coding = name === "*" ? "br" : name;
    if (!isSupportedEncoding(coding)) continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!(q > 0)) continue;
    if (q > bestQ || (q === bestQ && coding === "br")) {
      best = coding;
      bestQ = q;
    }
  }
  return best;
}

export function compress(encoding: Encoding, bytes: Uint8Array): Promise<Buffer> {
  return encoding === "gzip" ? gzip(bytes) : brotli(bytes, BROTLI_OPTIONS);
}

/** By body: an answer sent again (a kept answer) is one bytes object, never written to, as for its ETag. */
const compressedBodies = new WeakMap<Uint8Array, Partial<Record<Encoding, Promise<Buffer>>>>();

/** `compress`, made once per body and coding: a kept history page costs milliseconds to compress. */
export function compressOnce(encoding: Encoding, bytes: Uint8Array): Promise<Buffer> {
  let forms = compressedBodies.get(bytes);
  if (forms === undefined) compressedBodies.set(bytes, (forms = {}));
  const made = forms[encoding];
  if (made !== undefined) return made;
  const making = compress(encoding, bytes);
  forms[encoding] = making;
  // A failed compression is not kept: the next answer tries again.
  making.catch(() => {
    if (forms[encoding] === making) delete forms[encoding];
  });
  return making;
}

export class DecompressionError extends Error {
  constructor(
    message: string,
    /** True when the decompressed bytes would exceed the limit (a zip bomb, or just too big). */
    readonly tooLarge: boolean,
  ) {
    super(message);
  }
}

/**
 * Decompresses a request body, stopping at `maxBytes` of output so a small compressed body cannot
 * expand past the limit that applies to plain ones.
 */
export async function decompress(encoding: Encoding, bytes: Uint8Array, maxBytes: number): Promise<Buffer> {
  try {
    const options = { maxOutputLength: maxBytes };
    return await (encoding === "gzip" ? gunzip(bytes, options) : unbrotli(bytes, options));
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw new DecompressionError(`must be at most ${maxBytes} bytes decompressed`, true);
    }
    throw new DecompressionError(`is not valid ${encoding} data`, false);
  }
}
