import { HASH_SIZE, assertTreeNumber, type MerkleHasher } from "./merkle.js";
import type { HashReader, StoredHashAddress } from "./stored-hashes.js";

/**
 * The C2SP tlog-tiles layout of the stored hashes (stored-hashes.ts). A tile at level L holds up to
 * 256 consecutive stored hashes of tree level 8L: level 0 tiles hold leaf hashes, level 1 tiles the
 * roots of full level 0 tiles, and so on. The tree levels between (1-7, 9-15, ...) are not published;
 * they are recomputed from the tile below, which is why a tile is 256 hashes wide and 8 levels high.
 * The rightmost tile of a level is partial (width 1-255) until it fills.
 */

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 2 ** TILE_HEIGHT;

export interface TileId {
  readonly level: number;
  readonly index: number;
  /** 1..256; below TILE_WIDTH the tile is partial. */
  readonly width: number;
}

/** `tile/<L>/<N>[.p/<W>]`, N in x-prefixed groups of three digits (1234067 -> x001/x234/067). */
export function tilePath(tile: TileId): string {
  return `tile/${tile.level}/${encodeTileIndex(tile.index)}${partialSuffix(tile.width)}`;
}

/** `tile/entries/<N>[.p/<W>]`: the records whose leaf hashes level 0 tile N holds. */
export function entryBundlePath(index: number, width: number): string {
  return `tile/entries/${encodeTileIndex(index)}${partialSuffix(width)}`;
}

export type ParsedTilePath =
  | ({ readonly kind: "hashes" } & TileId)
  | { readonly kind: "entries"; readonly index: number; readonly width: number };

/**
 * The tile a request path names, or undefined unless the path is exactly the canonical spelling
 * (so one tile has one URL and caches never hold two copies).
 */
export function parseTilePath(path: string): ParsedTilePath | undefined {
  const match = /^tile\/(entries|\d{1,2})\/((?:x\d{3}\/)*\d{3})(?:\.p\/(\d{1,3}))?$/.exec(path);
  if (!match) return undefined;
  const [, levelText, indexText, widthText] = match;
  const index = Number(indexText!.replaceAll("x", "").replaceAll("/", ""));
  const width = widthText === undefined ? TILE_WIDTH : Number(widthText);
  if (!Number.isSafeInteger(index) || width < 1 || width > TILE_WIDTH) return undefined;
  const parsed: ParsedTilePath =
    levelText === "entries" ? { kind: "entries", index, width } : { kind: "hashes", level: Number(levelText), index, width };
  if (parsed.kind === "hashes" && parsed.level > 63) return undefined;
  const canonical = parsed.kind === "entries" ? entryBundlePath(index, width) : tilePath(parsed);
  return canonical === path ? parsed : undefined;
}

function encodeTileIndex(index: number): string {
  assertTreeNumber("tile index", index);
  const groups: string[] = [];
  let rest = index;
  do {
    groups.unshift(String(rest % 1000).padStart(3, "0"));
    rest = Math.floor(rest / 1000);
  } while (rest > 0);
  return groups.map((group, i) => (i < groups.length - 1 ? `x${group}` : group)).join("/");
}

function partialSuffix(width: number): string {
  if (!Number.isInteger(width) || width < 1 || width > TILE_WIDTH) throw new RangeError(`tile width ${width} is not 1..256`);
  return width === TILE_WIDTH ? "" : `.p/${width}`;
}

/** How many stored hashes of tile level `level` a tree of `size` leaves has. */
function hashesAtTileLevel(size: number, level: number): number {
  return Math.floor(size / TILE_WIDTH ** level);
}

/** The width tile (level, index) has in the tree of `size` leaves; 0 when the tree has no such tile. */
export function tileWidth(level: number, index: number, size: number): number {
  const count = hashesAtTileLevel(size, level) - index * TILE_WIDTH;
  return Math.max(0, Math.min(TILE_WIDTH, count));
}

/**
 * The tiles that growing the tree from oldSize to newSize creates or widens, each at its new width:
 * what to write after an append. Tiles it leaves alone are immutable. The level 0 entries give the
 * entry bundles to write as well.
 */
export function tilesChangedByAppend(oldSize: number, newSize: number): TileId[] {
  assertTreeNumber("oldSize", oldSize);
  assertTreeNumber("newSize", newSize);
  const tiles: TileId[] = [];
  for (let level = 0; hashesAtTileLevel(newSize, level) > hashesAtTileLevel(oldSize, level); level++) {
    const first = Math.floor(hashesAtTileLevel(oldSize, level) / TILE_WIDTH);
    const last = Math.floor((hashesAtTileLevel(newSize, level) - 1) / TILE_WIDTH);
    for (let index = first; index <= last; index++) tiles.push({ level, index, width: tileWidth(level, index, newSize) });
  }
  return tiles;
}

/** The stored hashes a tile holds, in tile order. */
export function storedHashesInTile(tile: TileId): StoredHashAddress[] {
  const level = tile.level * TILE_HEIGHT;
  return Array.from({ length: tile.width }, (_, i) => ({ level, index: tile.index * TILE_WIDTH + i }));
}

/**
 * Where a stored hash of any level lives: the tile whose hashes [first, first + count) are the
 * leaves of the subtree it is the root of. A stored hash of a tile level is the single hash at its
 * position; one between tile levels folds 2, 4, ... 128 neighbours, which never straddle a tile.
 */
export function tileSpanOfStoredHash(address: StoredHashAddress): { level: number; index: number; first: number; count: number } {
  const level = Math.floor(address.level / TILE_HEIGHT);
  const count = 2 ** (address.level - level * TILE_HEIGHT);
  const position = address.index * count;
  return { level, index: Math.floor(position / TILE_WIDTH), first: position % TILE_WIDTH, count };
}

/** A stored hash from the hashes of the tile tileSpanOfStoredHash named. */
export function storedHashFromTile(tileHashes: readonly Uint8Array[], address: StoredHashAddress, hasher: MerkleHasher): Uint8Array {
  const { first, count } = tileSpanOfStoredHash(address);
  if (first + count > tileHashes.length) {
    throw new RangeError(`stored hash ${address.level}/${address.index} needs ${first + count} hashes of a ${tileHashes.length}-wide tile`);
  }
  let layer = tileHashes.slice(first, first + count);
  while (layer.length > 1) {
    layer = Array.from({ length: layer.length / 2 }, (_, i) => hasher.nodeHash(layer[2 * i]!, layer[2 * i + 1]!));
  }
  return layer[0]!;
}

/** A tile's published bytes: its hashes back to back. */
export function encodeTile(hashes: readonly Uint8Array[]): Uint8Array {
  const bytes = new Uint8Array(hashes.length * HASH_SIZE);
  for (const [i, hash] of hashes.entries()) bytes.set(hash, i * HASH_SIZE);
  return bytes;
}

export function decodeTile(bytes: Uint8Array): Uint8Array[] {
  if (bytes.length === 0 || bytes.length % HASH_SIZE !== 0 || bytes.length > TILE_WIDTH * HASH_SIZE) {
    throw new RangeError(`a tile is 1 to 256 hashes of ${HASH_SIZE} bytes, not ${bytes.length} bytes`);
  }
  return Array.from({ length: bytes.length / HASH_SIZE }, (_, i) => bytes.slice(i * HASH_SIZE, (i + 1) * HASH_SIZE));
}

/** An entry bundle (tile/entries/N): records back to back, each after its length as a big-endian uint16. */
export function encodeEntryBundle(records: readonly Uint8Array[]): Uint8Array {
  const bytes = new Uint8Array(records.reduce((sum, record) => sum + 2 + record.length, 0));
  let offset = 0;
  for (const record of records) {
    if (record.length > 0xffff) throw new RangeError(`a record of ${record.length} bytes does not fit an entry bundle`);
    bytes[offset] = record.length >> 8;
    bytes[offset + 1] = record.length & 0xff;
    bytes.set(record, offset + 2);
    offset += 2 + record.length;
  }
  return bytes;
}

/** The records of an entry bundle; throws a RangeError when its lengths do not add up to its size. */
export function decodeEntryBundle(bytes: Uint8Array): Uint8Array[] {
  const records: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (offset + 2 > bytes.length) throw new RangeError(`an entry bundle ends inside a record's length, at byte ${offset}`);
    const length = (bytes[offset]! << 8) | bytes[offset + 1]!;
    const end = offset + 2 + length;
    if (end > bytes.length) throw new RangeError(`record ${records.length} of an entry bundle runs past its end`);
    records.push(bytes.slice(offset + 2, end));
    offset = end;
  }
  if (records.length > TILE_WIDTH) throw new RangeError(`an entry bundle holds at most ${TILE_WIDTH} records, not ${records.length}`);
  return records;
}

/**
 * A HashReader over tiles of the tree of `size` leaves, for a server that keeps tiles or a client
 * that fetches them. Each tile a batch needs is read once, at its width in that tree.
 */
export function tileHashReader(
  size: number,
  readTile: (tile: TileId) => readonly Uint8Array[] | Promise<readonly Uint8Array[]>,
  hasher: MerkleHasher,
): HashReader {
  return {
    async readHashes(addresses) {
      const spans = addresses.map(tileSpanOfStoredHash);
      const tiles = new Map<string, Promise<readonly Uint8Array[]>>();
      for (const span of spans) {
        const key = `${span.level}/${span.index}`;
        if (tiles.has(key)) continue;
        const tile = { level: span.level, index: span.index, width: tileWidth(span.level, span.index, size) };
        tiles.set(key, Promise.resolve(readTile(tile)));
      }
      return Promise.all(
        spans.map(async (span, i) => storedHashFromTile(await tiles.get(`${span.level}/${span.index}`)!, addresses[i]!, hasher)),
      );
    },
  };
}
