import type { GetEntryHistoryResponse } from "../../gen/registry/v1/transparency_log_service_pb.js";

/**
 * History pages answered again without reading, proving or encoding them. A page is fixed by its
 * DID, its `after` and its checkpoint's size: the log only grows, so that key is the whole input
 * and a kept page can never go stale. Only the memory they take is bounded.
 */
export interface HistoryAnswers {
  find(key: string): GetEntryHistoryResponse | undefined;
  /** Keeps `page` (frozen with its encodings), dropping the least recently used past the bound. */
  keep(key: string, page: GetEntryHistoryResponse): void;
  readonly bytes: number;
}

/** A page's size as kept: its text and hashes three times (message, binary and JSON encodings). */
function keptBytes(key: string, page: GetEntryHistoryResponse): number {
  let size = 2 * (key.length + page.checkpoint.length);
  for (const record of page.records) size += 3 * (record.record.length + record.inclusionProof.length * 32) + 64;
  return size;
}

export function historyPageKey(did: string, after: bigint | undefined, treeSize: number): string {
  return `${did}\n${after ?? ""}\n${treeSize}`;
}

export function createHistoryAnswers(maxBytes: number): HistoryAnswers {
  const pages = new Map<string, { page: GetEntryHistoryResponse; bytes: number }>();
  let bytes = 0;
  const forget = (key: string) => {
    const kept = pages.get(key);
    if (kept === undefined) return;
    pages.delete(key);
    bytes -= kept.bytes;
  };
  return {
    find(key) {
      const kept = pages.get(key);
      if (kept === undefined) return undefined;
      // Re-inserting keeps the Map in least-recently-used order.
      pages.delete(key);
      pages.set(key, kept);
      return kept.page;
    },
    keep(key, page) {
      forget(key);
      const size = keptBytes(key, page);
      if (size > maxBytes) return;
      pages.set(key, { page, bytes: size });
      bytes += size;
      while (bytes > maxBytes) forget(pages.keys().next().value as string);
    },
    get bytes() {
      return bytes;
    },
  };
}
