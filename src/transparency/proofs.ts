import { MerkleRangeError, assertTreeNumber, largestPowerOfTwoBelow, type MerkleHasher } from "./merkle.js";
import { coveringSubtrees, foldSubtreeHashes, readStoredHashes, type HashReader, type LeafRange } from "./stored-hashes.js";

/**
 * Roots and proofs for any tree size the log has reached, computed from stored hashes. Each answer
 * is planned as leaf ranges first (pure), then every stored hash the plan needs is read in one
 * call, then each range's hashes are folded into its MTH.
 */

export async function rootHash(size: number, reader: HashReader, hasher: MerkleHasher): Promise<Uint8Array> {
  assertTreeNumber("size", size);
  if (size === 0) return hasher.emptyRoot();
  const [root] = await rangeHashes([{ start: 0, end: size }], reader, hasher);
  return root!;
}

/** RFC 9162 PATH(index, D[0:size]): sibling hashes from the leaf up to the root. */
export async function inclusionProof(index: number, size: number, reader: HashReader, hasher: MerkleHasher): Promise<Uint8Array[]> {
  return rangeHashes(inclusionProofRanges(index, size), reader, hasher);
}

/**
 * PATH(index, D[0:size]) for each of `indexes`, with every stored hash they need read in one call:
 * a history's proofs share most of their upper siblings.
 */
export async function inclusionProofs(
  indexes: readonly number[],
  size: number,
  reader: HashReader,
  hasher: MerkleHasher,
): Promise<Uint8Array[][]> {
  const plans = indexes.map((index) => inclusionProofRanges(index, size));
  const hashes = await rangeHashes(plans.flat(), reader, hasher);
  let next = 0;
  return plans.map((ranges) => hashes.slice(next, (next += ranges.length)));
}

/**
 * RFC 9162 PROOF(oldSize, D[0:newSize]). Empty when oldSize is 0 or equals newSize, which is what
 * verifyConsistency expects in those cases.
 */
export async function consistencyProof(oldSize: number, newSize: number, reader: HashReader, hasher: MerkleHasher): Promise<Uint8Array[]> {
  return rangeHashes(consistencyProofRanges(oldSize, newSize), reader, hasher);
}

/** The leaf ranges whose MTHs make up PATH(index, D[0:size]), in proof order. */
export function inclusionProofRanges(index: number, size: number): LeafRange[] {
  assertTreeNumber("index", index);
  assertTreeNumber("size", size);
  if (index >= size) throw new MerkleRangeError(`index ${index} is not in a tree of size ${size}`);
  const siblings: LeafRange[] = [];
  let start = 0;
  let end = size;
  while (end - start > 1) {
    const split = start + largestPowerOfTwoBelow(end - start);
    if (index < split) {
      siblings.push({ start: split, end });
      end = split;
    } else {
      siblings.push({ start, end: split });
      start = split;
    }
  }
  // The descent met the siblings root-first; the proof lists them leaf-first.
  return siblings.reverse();
}

/** The leaf ranges whose MTHs make up PROOF(oldSize, D[0:newSize]), in proof order. */
export function consistencyProofRanges(oldSize: number, newSize: number): LeafRange[] {
  assertTreeNumber("oldSize", oldSize);
  assertTreeNumber("newSize", newSize);
  if (oldSize > newSize) throw new MerkleRangeError(`old size ${oldSize} exceeds new size ${newSize}`);
  if (oldSize === 0 || oldSize === newSize) return [];
  const ranges: LeafRange[] = [];
  let start = 0;
  let end = newSize;
  // SUBPROOF's flag: true while the subtree under consideration starts at leaf 0, where the old
  // tree's own root is one the verifier already holds and so is left out.
  let oldTreeIsWholeSubtree = true;
  while (oldSize !== end) {
    const split = start + largestPowerOfTwoBelow(end - start);
    if (oldSize <= split) {
      ranges.push({ start: split, end });
      end = split;
    } else {
      ranges.push({ start, end: split });
      start = split;
      oldTreeIsWholeSubtree = false;
    }
  }
  if (!oldTreeIsWholeSubtree) ranges.push({ start, end });
  return ranges.reverse();
}

async function rangeHashes(ranges: readonly LeafRange[], reader: HashReader, hasher: MerkleHasher): Promise<Uint8Array[]> {
  const perRange = ranges.map((range) => coveringSubtrees(range));
  const hashes = await readStoredHashes(reader, perRange.flat());
  let next = 0;
  return perRange.map((addresses) => {
    const mine = hashes.slice(next, next + addresses.length);
    next += addresses.length;
    return foldSubtreeHashes(mine, hasher);
  });
}
