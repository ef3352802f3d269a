import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

/**
 * Has protobuf-es encode strings with node's Buffer instead of TextEncoder. Same bytes (UTF-8,
 * lone surrogates as U+FFFD), but node's TextEncoder makes a fresh buffer through a native call
 * for every string, which makes encoding an entry of a dozen short strings more than twice as dear
 * as Buffer's pooled path (docs/performance.md#encoding-answers). Decoding stays with
 * TextDecoder, the faster of the two for decoding. The setting
 * is process-wide, as protobuf-es keeps it, so Connect's own codecs get it too.
 */
export function useNodeTextEncoding(): void {
  const standard = getTextEncoding();
  configureTextEncoding({
    ...standard,
    encodeUtf8: (text) => Buffer.from(text, "utf8") as unknown as Uint8Array<ArrayBuffer>,
  });
}
