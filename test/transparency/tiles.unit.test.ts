import { describe, expect, it } from "vitest";
import { nodeMerkleHasher as hasher } from "../../src/transparency/node-merkle-hasher.js";
import { consistencyProof, inclusionProof, rootHash } from "../../src/transparency/proofs.js";
import { appendLeaves, type HashReader, type StoredHashAddress } from "../../src/transparency/stored-hashes.js";
import {
  decodeEntryBundle,
  decodeTile,
  encodeEntryBundle,
  encodeTile,
  entryBundlePath,
  parseTilePath,
  storedHashesInTile,
  tileHashReader,
  tilePath,
  tileSpanOfStoredHash,
  tilesChangedByAppend,
  type TileId,
} from "../../src/transparency/tiles.js";

/** The C2SP tlog-tiles layout: paths, which tiles an append touches, and proofs served from tiles. */

describe("tile paths", () => {
  it("spells indexes in x-prefixed groups of three digits and marks partial tiles", () => {
    expect(tilePath({ level: 0, index: 0, width: 256 })).toBe("tile/0/000");
    expect(tilePath({ level: 0, index: 1234067, width: 256 })).toBe("tile/0/x001/x234/067");
    expect(tilePath({ level: 2, index: 1000, width: 8 })).toBe("tile/2/x001/000.p/8");
    expect(tilePath({ level: 1, index: 999, width: 255 })).toBe("tile/1/999.p/255");
    expect(entryBundlePath(1234067, 256)).toBe("tile/entries/x001/x234/067");
    expect(entryBundlePath(5, 1)).toBe("tile/entries/005.p/1");
    expect(() => tilePath({ level: 0, index: 0, width: 0 })).toThrow(RangeError);
    expect(() => tilePath({ level: 0, index: 0, width: 257 })).toThrow(RangeError);
  });

  it("parses exactly the canonical spellings", () => {
    expect(parseTilePath("tile/0/x001/x234/067")).toEqual({ kind: "hashes", level: 0, index: 1234067, width: 256 });
    expect(parseTilePath("tile/3/x001/000.p/8")).toEqual({ kind: "hashes", level: 3, index: 1000, width: 8 });
    expect(parseTilePath("tile/entries/005.p/1")).toEqual({ kind: "entries", index: 5, width: 1 });
    for (const path of [
      "tile/0/x000/001",
      "tile/0/1",
      "tile/0/001.p/256",
      "tile/0/001.p/0",
      "tile/0/001.p/05",
      "tile/00/001",
      "tile/64/000",
      "tile/0/001/",
      "/tile/0/001",
      "tile/data/001",
    ]) {
      expect(parseTilePath(path), path).toBeUndefined();
    }
  });
});

describe("tiles an append touches", () => {
  const ids = (tiles: TileId[]) => tiles.map(tilePath);

  it("widens the partial tile, starts new ones and leaves full tiles alone", () => {
    expect(ids(tilesChangedByAppend(0, 1))).toEqual(["tile/0/000.p/1"]);
    expect(ids(tilesChangedByAppend(3, 3))).toEqual([]);
    expect(ids(tilesChangedByAppend(255, 256))).toEqual(["tile/0/000", "tile/1/000.p/1"]);
    expect(ids(tilesChangedByAppend(256, 300))).toEqual(["tile/0/001.p/44"]);
    expect(ids(tilesChangedByAppend(300, 1000))).toEqual(["tile/0/001", "tile/0/002", "tile/0/003.p/232", "tile/1/000.p/3"]);
    expect(ids(tilesChangedByAppend(65535, 65536))).toEqual(["tile/0/255", "tile/1/000", "tile/2/000.p/1"]);
  });

  it("names each stored hash of a tile level, in order", () => {
    expect(storedHashesInTile({ level: 1, index: 2, width: 3 })).toEqual([
      { level: 8, index: 512 },
      { level: 8, index: 513 },
      { level: 8, index: 514 },
    ]);
  });

  it("finds levels between tile levels inside the tile below", () => {
    expect(tileSpanOfStoredHash({ level: 3, index: 33 })).toEqual({ level: 0, index: 1, first: 8, count: 8 });
    expect(tileSpanOfStoredHash({ level: 8, index: 300 })).toEqual({ level: 1, index: 1, first: 44, count: 1 });
    expect(tileSpanOfStoredHash({ level: 15, index: 1 })).toEqual({ level: 1, index: 0, first: 128, count: 128 });
  });
});

describe("proofs served from tiles", async () => {
  const size = 70_000; // past 65536, so level 2 tiles exist
  const leafHashes = Array.from({ length: size }, (_, i) => hasher.leafHash(new TextEncoder().encode(`record ${i}`)));
  const { storedHashes } = await appendLeaves(0, leafHashes, { readHashes: () => [] }, hasher);
  const stored = new Map(storedHashes.map(({ level, index, hash }) => [`${level}/${index}`, hash]));
  const storedReader: HashReader = {
    readHashes: (addresses: readonly StoredHashAddress[]) => addresses.map(({ level, index }) => stored.get(`${level}/${index}`)!),
  };
  // The tiles a server would publish for the whole log, as bytes, keyed by path.
  const published = new Map<string, Uint8Array>();
  for (const tile of tilesChangedByAppend(0, size)) {
    published.set(tilePath(tile), encodeTile(storedHashesInTile(tile).map(({ level, index }) => stored.get(`${level}/${index}`)!)));
  }

  /** Tiles of the tree of `treeSize`: a partial tile is cut from the published one, as the log served it then. */
  function readerAt(treeSize: number, reads: string[] = []): HashReader {
    return tileHashReader(
      treeSize,
      (tile) => {
        reads.push(tilePath(tile));
        const full = published.get(tilePath({ ...tile, width: 256 })) ?? published.get(tilePath(tile))!;
        return decodeTile(full.slice(0, tile.width * 32));
      },
      hasher,
    );
  }

  const sizes = [1, 2, 255, 256, 257, 511, 4097, 65535, 65536, 65537, size];

  it("give the same roots and proofs as the stored hashes", async () => {
    for (const treeSize of sizes) {
      expect(await rootHash(treeSize, readerAt(treeSize), hasher)).toEqual(await rootHash(treeSize, storedReader, hasher));
      for (const index of new Set([0, 1, 255, 256, 40_000, treeSize - 1].filter((i) => i < treeSize))) {
        const fromTiles = await inclusionProof(index, treeSize, readerAt(treeSize), hasher);
        expect(fromTiles, `${index}/${treeSize}`).toEqual(await inclusionProof(index, treeSize, storedReader, hasher));
      }
      for (const oldSize of sizes.filter((s) => s < treeSize)) {
        const fromTiles = await consistencyProof(oldSize, treeSize, readerAt(treeSize), hasher);
        expect(fromTiles, `${oldSize}->${treeSize}`).toEqual(await consistencyProof(oldSize, treeSize, storedReader, hasher));
      }
    }
  });

  it("read each tile once per proof, at its width in that tree", async () => {
    const reads: string[] = [];
    await inclusionProof(40_000, 65537, readerAt(65537, reads), hasher);
    // Levels 0-7 of the left half come from leaf tile 156, levels 8-15 from level 1 tile 0, and the
    // lone right sibling is leaf 65536, the first hash of a partial leaf tile.
    expect(reads.sort()).toEqual(["tile/0/156", "tile/0/256.p/1", "tile/1/000"]);

    const lastLeafReads: string[] = [];
    await inclusionProof(65536, 65537, readerAt(65537, lastLeafReads), hasher);
    // Its only sibling is the root of the first 65536 leaves: a level 16 hash, so a level 2 tile.
    expect(lastLeafReads).toEqual(["tile/2/000.p/1"]);
  });

  it("refuses tile bytes that are not whole hashes", () => {
    expect(() => decodeTile(new Uint8Array(33))).toThrow(RangeError);
    expect(() => decodeTile(new Uint8Array(0))).toThrow(RangeError);
    expect(() => decodeTile(new Uint8Array(257 * 32))).toThrow(RangeError);
  });
});

describe("entry bundles", () => {
  it("round-trip records of any length up to 64 KiB, the empty record included", () => {
    const records = [new Uint8Array(0), new TextEncoder().encode('{"index":"1"}'), new Uint8Array(0xffff).fill(7)];
    const bundle = encodeEntryBundle(records);
    expect(Array.from(bundle.subarray(0, 4))).toEqual([0, 0, 0, 13]);
    expect(decodeEntryBundle(bundle)).toEqual(records);
  });

  it("refuse a record too long to frame, and bundles whose lengths do not add up", () => {
    expect(() => encodeEntryBundle([new Uint8Array(0x10000)])).toThrow(RangeError);
    expect(() => decodeEntryBundle(Uint8Array.of(0))).toThrow(/inside a record's length/);
    expect(() => decodeEntryBundle(Uint8Array.of(0, 5, 1, 2))).toThrow(/runs past its end/);
    expect(() => decodeEntryBundle(new Uint8Array(257 * 2))).toThrow(/at most 256 records/);
  });
});
