import { decodeEntryBundle, entryBundlePath, TILE_WIDTH } from "../transparency/tiles.js";
import { MirrorRefusedError } from "./mirror-store.js";
import type { LogSource } from "./log-mirror.js";

/** The source could not be read: unreachable, or it answered with an error. */
export class LogSourceError extends Error {
  override readonly name = "LogSourceError";
}

/**
 * Another registry's log over plain HTTP: its C2SP paths (/checkpoint, /tile/entries/...), which
 * any HTTP cache may serve, and its consistency proofs (GET /v1/log/proofs/consistency).
 */
export function createHttpLogSource(baseUrl: string, fetchImpl: typeof fetch = fetch): LogSource {
  const base = baseUrl.replace(/\/+$/, "");

  async function get(path: string): Promise<Response> {
    let response: Response;
    try {
      response = await fetchImpl(`${base}/${path}`, { headers: { "user-agent": "registry-mirror" } });
    } catch (error) {
      throw new LogSourceError(`${base} cannot be reached: ${(error as Error).message}`);
    }
    if (!response.ok) {
      const text = (await response.text().catch(() => "")).slice(0, 300);
      throw new LogSourceError(`GET ${base}/${path} answered ${response.status}${text === "" ? "" : `: ${text}`}`);
    }
    return response;
  }

  return {
    url: base,
    async logKey() {
      const { verifierKey } = (await (await get("v1/log/key")).json()) as { verifierKey?: unknown };
      if (typeof verifierKey !== "string") throw new LogSourceError(`${base}/v1/log/key has no verifierKey`);
      return verifierKey;
    },
    async checkpoint() {
      return (await get("checkpoint")).text();
    },
    async consistencyProof(fromSize, toSize) {
      const body = (await (await get(`v1/log/proofs/consistency?fromSize=${fromSize}&toSize=${toSize}`)).json()) as { proof?: unknown };
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
          const bytes = new Uint8Array(await (await get(entryBundlePath(index, width))).arrayBuffer());
          let records: Uint8Array[];
          try {
            records = decodeEntryBundle(bytes);
          } catch (error) {
            throw new MirrorRefusedError(`${base}'s entry bundle ${index} is malformed: ${(error as Error).message}`);
          }
          if (records.length !== width) throw new MirrorRefusedError(`${base}'s entry bundle ${index} holds ${records.length} records, not ${width}`);
          return records;
        }),
      );
      const offset = from - first * TILE_WIDTH;
      return bundles.flat().slice(offset, offset + count);
    },
  };
}
