import { HASH_SIZE, assertTreeNumber, hashesEqual, type MerkleHasher } from "./merkle.js";

/**
 * Proof verification as RFC 9162 sections 2.1.3.2 and 2.1.4.2 describe it. Pure and browser-safe:
 * no stored hashes, no node: imports; the SHA-256 comes in through `hasher`.
 *
 * Error policy: everything a log could send is judged, never thrown. A proof of the wrong length, a
 * hash that is not 32 bytes, an index at or past the size, an old size above the new one: all return
 * false. Only an index or size that is not a non-negative safe integer throws MerkleRangeError,
 * because that is the caller's parsing bug, not the log's misbehaviour.
 *
 * A root binds a size only through the signed checkpoint that carries both: these functions check
 * that the proof links the leaf (or old root) to the root given for the size given, nothing more.
 */

/** True when `leafHash` is the leaf at `index` of the tree of `size` leaves whose root is `root`. */
export function verifyInclusion(
  leafHash: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
  hasher: MerkleHasher,
): boolean {
  assertTreeNumber("index", index);
  assertTreeNumber("size", size);
  if (index >= size) return false;
  if (!allAreHashes([leafHash, root, ...proof])) return false;

  // fn walks the leaf's position up the tree, sn the last leaf's; where they meet the leaf is on the
  // right edge and its sibling (if any) is to the left.
  let fn = index;
  let sn = size - 1;
  let computed = leafHash;
  for (const sibling of proof) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      computed = hasher.nodeHash(sibling, computed);
      // On the right edge the tree may have no sibling at some levels: climb past them.
      while (!isOdd(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      computed = hasher.nodeHash(computed, sibling);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && hashesEqual(computed, root);
}

/**
 * True when the tree of `newSize` leaves with root `newRoot` extends the tree of `oldSize` leaves
 * with root `oldRoot`. The empty tree is extended by every tree (with an empty proof, and oldRoot
 * must then be the empty root); equal sizes need an empty proof and equal roots.
 */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
  proof: readonly Uint8Array[],
  hasher: MerkleHasher,
): boolean {
  assertTreeNumber("oldSize", oldSize);
  assertTreeNumber("newSize", newSize);
  if (oldSize > newSize) return false;
  if (!allAreHashes([oldRoot, newRoot, ...proof])) return false;
  if (oldSize === 0) return proof.length === 0 && hashesEqual(oldRoot, hasher.emptyRoot());
  if (oldSize === newSize) return proof.length === 0 && hashesEqual(oldRoot, newRoot);
  if (proof.length === 0) return false;

  // When the old tree is a complete subtree of the new one, the proof leaves its root out because
  // the verifier already has it.
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : proof;
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (isOdd(fn)) [fn, sn] = [half(fn), half(sn)];

  // oldComputed rebuilds the old root from the hashes left of the old edge; newComputed rebuilds the
  // new root from all of them.
  let oldComputed = path[0]!;
  let newComputed = path[0]!;
  for (const node of path.slice(1)) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      oldComputed = hasher.nodeHash(node, oldComputed);
      newComputed = hasher.nodeHash(node, newComputed);
      while (!isOdd(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      newComputed = hasher.nodeHash(newComputed, node);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && hashesEqual(oldComputed, oldRoot) && hashesEqual(newComputed, newRoot);
}

function allAreHashes(values: readonly Uint8Array[]): boolean {
  return values.every((value) => value instanceof Uint8Array && value.length === HASH_SIZE);
}

// Arithmetic rather than bitwise operators: JavaScript's bitwise operators truncate to 32 bits.
function isOdd(n: number): boolean {
  return n % 2 === 1;
}

function half(n: number): number {
  return Math.floor(n / 2);
}

function isPowerOfTwo(n: number): boolean {
  let k = 1;
  while (k < n) k *= 2;
  return k === n;
}
