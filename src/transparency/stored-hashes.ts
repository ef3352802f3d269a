import { MerkleRangeError, assertTreeNumber, type MerkleHasher } from "./merkle.js";

/**
 * The hashes a log keeps: for every level, the roots of its complete subtrees only. The hash at
 * (level, index) is the root of leaves [index * 2^level, (index + 1) * 2^level), so it is written
 * once, when the last of those leaves is appended, and never changes. Level 0 holds the leaf hashes.
 *
 * Every hash of any tree size is a fold of at most log2(size) of these, which is what lets the
 * server answer roots and proofs for old sizes without keeping old trees, and what the C2SP
 * tlog-tiles layout publishes (tiles.ts maps these addresses onto tiles).
 */
export interface StoredHashAddress {
  readonly level: number;
  readonly index: number;
}

export interface StoredHash extends StoredHashAddress {
  readonly hash: Uint8Array;
}

/**
 * Storage as proof generation sees it. Asked for several addresses at once so a table can answer in
 * one query and a tile store can fetch each tile once; answers in the order asked. It is only asked
 * for hashes of complete subtrees within the tree size the caller named, so a reader backed by a
 * log of at least that size always has them. Sync or async, whichever the storage is.
 */
export interface HashReader {
  readHashes(addresses: readonly StoredHashAddress[]): readonly Uint8Array[] | Promise<readonly Uint8Array[]>;
}

/** A run of leaves [start, end). */
export interface LeafRange {
  readonly start: number;
  readonly end: number;
}

/**
 * The complete subtrees that cover `range`, left to right, each as large as its alignment allows.
 * For the ranges RFC 9162 hashes (start a multiple of the smallest power of two >= the length),
 * these are the subtrees its MTH recursion bottoms out in, so foldSubtreeHashes of their hashes is
 * MTH of the range.
 */
export function coveringSubtrees(range: LeafRange): StoredHashAddress[] {
  const addresses: StoredHashAddress[] = [];
  let start = range.start;
  while (start < range.end) {
    let level = 0;
    let width = 1;
    while (start % (width * 2) === 0 && start + width * 2 <= range.end) {
      width *= 2;
      level += 1;
    }
    addresses.push({ level, index: start / width });
    start += width;
  }
  return addresses;
}

/**
 * MTH of a range from its covering subtrees' hashes: MTH splits off the largest left subtree first,
 * so the smaller right-hand subtrees combine first.
 */
export function foldSubtreeHashes(hashes: readonly Uint8Array[], hasher: MerkleHasher): Uint8Array {
  if (hashes.length === 0) throw new RangeError("an empty range has no subtree hash");
  let folded = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i--) folded = hasher.nodeHash(hashes[i]!, folded);
  return folded;
}

/** Reads addresses in one call and checks the reader kept its side of the bargain. */
export async function readStoredHashes(reader: HashReader, addresses: readonly StoredHashAddress[]): Promise<readonly Uint8Array[]> {
  if (addresses.length === 0) return [];
  const hashes = await reader.readHashes(addresses);
  if (hashes.length !== addresses.length) {
    throw new Error(`HashReader answered ${hashes.length} hashes for ${addresses.length} addresses`);
  }
  return hashes;
}

export interface AppendResult {
  /** Every hash that became stored: each new leaf hash and each subtree the new leaves completed. */
  readonly storedHashes: StoredHash[];
  readonly size: number;
  readonly root: Uint8Array;
}

/**
 * Appends `leafHashes` to the tree of `oldSize` leaves. Reads only the old tree's right edge (at
 * most log2(oldSize) hashes, in one call) and returns what to write, so an append costs O(log n)
 * reads once and about two hashes per leaf. The caller writes storedHashes and the new size
 * together; writing the same batch twice writes the same bytes.
 */
export async function appendLeaves(
  oldSize: number,
  leafHashes: readonly Uint8Array[],
  reader: HashReader,
  hasher: MerkleHasher,
): Promise<AppendResult> {
  assertTreeNumber("oldSize", oldSize);
  assertTreeNumber("new size", oldSize + leafHashes.length);
  const edgeAddresses = coveringSubtrees({ start: 0, end: oldSize });
  const edgeHashes = await readStoredHashes(reader, edgeAddresses);

  // The right edge: the complete subtrees the tree currently splits into, largest (leftmost) first.
  // Their levels are the set bits of the size, so a new leaf merges with equal-level neighbours
  // exactly as a binary counter carries.
  const edge = edgeAddresses.map((address, i) => ({ level: address.level, hash: edgeHashes[i]! }));
  const storedHashes: StoredHash[] = [];
  let size = oldSize;
  for (const leafHash of leafHashes) {
    storedHashes.push({ level: 0, index: size, hash: leafHash });
    edge.push({ level: 0, hash: leafHash });
    size += 1;
    while (edge.length >= 2 && edge[edge.length - 1]!.level === edge[edge.length - 2]!.level) {
      const right = edge.pop()!;
      const left = edge.pop()!;
      const level = left.level + 1;
      const hash = hasher.nodeHash(left.hash, right.hash);
      storedHashes.push({ level, index: size / 2 ** level - 1, hash });
      edge.push({ level, hash });
    }
  }
  const root =
    edge.length === 0
      ? hasher.emptyRoot()
      : foldSubtreeHashes(
          edge.map((node) => node.hash),
          hasher,
        );
  return { storedHashes, size, root };
}

/**
 * The position of a stored hash in the order appendLeaves writes them (each leaf hash, then the
 * subtrees it completes, lowest first): one integer key for a table, where a log's first n leaves
 * occupy keys [0, storedHashCount(n)) exactly.
 */
export function storedHashIndex(address: StoredHashAddress): number {
  assertTreeNumber("level", address.level);
  assertTreeNumber("index", address.index);
  const completingLeaf = (address.index + 1) * 2 ** address.level - 1;
  return storedHashCount(completingLeaf) + address.level;
}

/**
 * How many stored hashes a tree of `size` leaves has: one per complete subtree of each level. Almost
 * twice the size, so it stays exact only up to 2^52 leaves; beyond that it throws rather than round.
 */
export function storedHashCount(size: number): number {
  assertTreeNumber("size", size);
  if (size > 2 ** 52) throw new MerkleRangeError(`stored hash positions of a ${size}-leaf tree exceed 2^53`);
  // Level l has floor(size / 2^l) complete subtrees; summed over l that is 2 * size - popcount(size).
  let ones = 0;
  for (let rest = size; rest > 0; rest = Math.floor(rest / 2)) ones += rest % 2;
  return 2 * size - ones;
}
