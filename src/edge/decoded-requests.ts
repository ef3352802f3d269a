/**
 * Requests decoded before, by what named them on the wire (a REST method and URL, a read's body
 * bytes): a read is asked for again and again, and decoding it again (matching a route, building a
 * message, scanning its wire bytes) is a measurable share of a kept answer's cost
 * (docs/performance.md#rest-and-the-shared-pipeline). Every call that sends the same bytes shares
 * what is kept, so it is frozen on the way in. Bounded in entries and in key length, oldest out
 * first; a request that fails to decode is never kept.
 */
export interface DecodedRequests<T> {
  get(key: string): T | undefined;
  /** Keeps `decoded`, frozen, under `key` (unless the key is too long), and returns it. */
  keep(key: string, decoded: T): T;
}

export const DECODED_REQUESTS_MAX = 4096;
/** Longer keys are decoded every time: the bound on memory is entries times this. */
export const DECODED_REQUEST_KEY_MAX = 512;

export function createDecodedRequests<T>(freeze: (decoded: T) => T, maxEntries = DECODED_REQUESTS_MAX): DecodedRequests<T> {
  const kept = new Map<string, T>();
  return {
    get: (key) => kept.get(key),
    keep(key, decoded) {
      if (key.length > DECODED_REQUEST_KEY_MAX || maxEntries === 0) return decoded;
      if (kept.size >= maxEntries) kept.delete(kept.keys().next().value as string);
      kept.set(key, freeze(decoded));
      return decoded;
    },
  };
}
