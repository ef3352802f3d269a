import { decodeEntryBundle, entryBundlePath, TILE_WIDTH } from "../transparency/tiles.js";
import { boundedGet, type RequestTimeouts } from "./bounded-get.js";
import { MirrorRefusedError } from "./mirror-errors.js";
import { DEFAULT_MIRROR_SETTINGS, LARGEST_ANSWER_BYTES, type MirrorSettings } from "./mirror-settings.js";
import type { LogSource } from "./log-mirror.js";

export interface HttpLogSourceOptions {
  readonly limits?: RequestTimeouts & Pick<MirrorSettings, "maxBundleBytes">;
  /** Stops every request under way and refuses new ones (MirrorStoppedError). */
  readonly signal?: AbortSignal;
}

/**
 * Another registry's log over plain HTTP: its C2SP paths (/checkpoint, /tile/entries/...), which
 * any HTTP cache may serve, and its consistency proofs (GET /v1/log/proofs/consistency). Every
 * request is bounded in time and size (bounded-get.ts).
 */
export function createHttpLogSource(baseUrl: string, options: HttpLogSourceOptions = {}): LogSource {
  const base = baseUrl.replace(/\/+$/, "");
  const limits = options.limits ?? DEFAULT_MIRROR_SETTINGS;

  const get = (path: string, maxBytes: number) =>
    boundedGet(new URL(`${base}/${path}`), { maxBytes, timeouts: limits, signal: options.signal });

  async function getJson(path: string, maxBytes: number): Promise<Record<string, unknown>> {
    const text = Buffer.from(await get(path, maxBytes)).toString("utf8");
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // Refused below, as any answer that is not a JSON object.
    }
    throw new MirrorRefusedError(`${base}/${path} answered something other than a JSON object`);
  }

  return {
    url: base,
    async logKey() {
      const { verifierKey } = await getJson("v1/log/key", LARGEST_ANSWER_BYTES.logKey);
      if (typeof verifierKey !== "string") throw new MirrorRefusedError(`${base}/v1/log/key has no verifierKey`);
      return verifierKey;
    },
    async checkpoint() {
      return Buffer.from(await get("checkpoint", LARGEST_ANSWER_BYTES.checkpoint)).toString("utf8");
    },
    async consistencyProof(fromSize, toSize) {
      const body = await getJson(`v1/log/proofs/consistency?fromSize=${fromSize}&toSize=${toSize}`, LARGEST_ANSWER_BYTES.consistencyProof);
      if (!Array.isArray(body.proof) || !body.proof.every((hash) => typeof hash === "string")) {
        throw new MirrorRefusedError(`${base} answered a consistency proof without its hashes`);
      }
      return body.proof.map((hash: string) => new Uint8Array(Buffer.from(hash, "base64")));
    },
    async records(from, count, treeSize) {
      const first = Math.floor(from / TILE_WIDTH);
      const last = Math.floor((from + count - 1) / TILE_WIDTH);
      const bundles = await Promise.all(
        Array.from({ length: last - first + 1 }, async (_, i) => {
          const index = first + i;
          const width = Math.min(TILE_WIDTH, treeSize - index * TILE_WIDTH);
          const bytes = await get(entryBundlePath(index, width), limits.maxBundleBytes);
          let records: Uint8Array[];
          try {
            records = decodeEntryBundle(bytes);
          } catch (error) {
            throw new MirrorRefusedError(`${base}'s entry bundle ${index} is malformed: ${(error as Error).message}`);
          }
          if (records.length !== width)
            throw new MirrorRefusedError(`${base}'s entry bundle ${index} holds ${records.length} records, not ${width}`);
          return records;
        }),
      );
      const offset = from - first * TILE_WIDTH;
      return bundles.flat().slice(offset, offset + count);
    },
  };
}
