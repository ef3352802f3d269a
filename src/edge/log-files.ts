import { Code, ConnectError } from "@connectrpc/connect";
import type { TransparencyService } from "../changes/transparency-service.js";
import type { TreeStore } from "../changes/transparency-log.js";
import { encodeEntryBundle, encodeTile, parseTilePath, storedHashesInTile, tileWidth, TILE_WIDTH } from "../transparency/tiles.js";
import { negotiateEncoding } from "../transport/compression.js";
import type { HttpExchange } from "../transport/http-exchange.js";
import type { ExchangeLimit } from "./rate-limit-interceptor.js";
import { writeRestError } from "./rest-transcoder.js";
import { toConnectError } from "./error-mapping.js";

/** Serves the C2SP tlog-tiles paths, or answers undefined for a path that is not one. */
export type LogFiles = (exchange: HttpExchange) => Promise<void> | undefined;

export interface LogFilesOptions {
  readonly store: TreeStore;
  readonly transparency: TransparencyService;
  /** Logs what fails unexpectedly (the client gets a bare internal error). */
  readonly log: (error: unknown) => void;
  /** The per-address "reads" limit every checkpoint and tile request draws from; none when reads are not limited. */
  readonly limitRead?: ExchangeLimit;
}

/** Whatever a tile's width, its bytes never change: caches may keep it for good. */
const IMMUTABLE = "public, max-age=31536000, immutable";

/**
 * The transparency log as C2SP tlog-tiles (c2sp.org/tlog-tiles): GET /checkpoint (the latest
 * signed checkpoint), GET /tile/<L>/<N>[.p/<W>] (hash tiles) and GET /tile/entries/<N>[.p/<W>]
 * (the records, each as a big-endian uint16 length and its bytes). Tiles are served up to the
 * latest checkpoint's size, so every tile a client fetches agrees with a root it can verify.
 */
export function createLogFiles(options: LogFilesOptions): LogFiles {
  const { store, transparency } = options;
  return (exchange) => {
    if (exchange.method !== "GET" && exchange.method !== "HEAD") return undefined;
    if (exchange.path === "/checkpoint") return answer(exchange, serveCheckpoint);
    if (!exchange.path.startsWith("/tile/")) return undefined;
    return answer(exchange, serveTile);
  };

  async function answer(exchange: HttpExchange, serve: (exchange: HttpExchange) => Promise<void>): Promise<void> {
    exchange.observation.protocol = "tlog-tiles";
    exchange.observation.route = exchange.path === "/checkpoint" ? "GET /checkpoint" : "GET /tile/...";
    if (options.limitRead !== undefined && !(await options.limitRead(exchange))) return;
    try {
      await serve(exchange);
      exchange.observation.code = "ok";
    } catch (error) {
      await writeRestError(
        exchange,
        toConnectError(error, options.log),
        undefined,
        {},
        negotiateEncoding(exchange.header("accept-encoding")),
      );
    }
  }

  async function serveCheckpoint(exchange: HttpExchange): Promise<void> {
    const checkpoint = await transparency.latestCheckpoint();
    exchange.respond(200, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-cache" }, Buffer.from(checkpoint.note));
  }

  async function serveTile(exchange: HttpExchange): Promise<void> {
    const tile = parseTilePath(exchange.path.slice(1));
    if (tile === undefined)
      throw new ConnectError(`${exchange.path} is not a tile path (tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>])`, Code.NotFound);
    const { size } = await transparency.latestCheckpoint();
    const available = tileWidth(tile.kind === "entries" ? 0 : tile.level, tile.index, size);
    if (tile.width > available)
      throw new ConnectError(`${exchange.path} is beyond the latest checkpoint's tree (size ${size})`, Code.NotFound);
    const body =
      tile.kind === "entries"
        ? encodeEntryBundle(await store.records(tile.index * TILE_WIDTH, tile.width))
        : encodeTile(await store.readHashes(storedHashesInTile(tile)));
    exchange.respond(200, { "content-type": "application/octet-stream", "cache-control": IMMUTABLE }, body);
  }
}
