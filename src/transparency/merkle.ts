/**
 * RFC 9162 (formerly RFC 6962) Merkle tree hashing, independent of where SHA-256 comes from.
 *
 * This module and everything it imports stay free of `node:` imports, so the SDK can verify proofs
 * in a browser. The project has no synchronous browser SHA-256 (WebCrypto's digest is async and
 * @noble/hashes is not a dependency), so callers pass one in: node-merkle-hasher.ts builds the
 * server's from node:crypto, and a browser supplies its own.
 *
 * Sizes and indexes are plain `number`s and must be safe integers (below 2^53): a log that grows a
 * million records a second takes over 280 years to reach that bound, and the arithmetic here never
 * uses 32-bit bitwise operators, so it stays exact all the way there.
 */

/** Any SHA-256: 32 bytes out for the bytes in. */
export type Sha256 = (bytes: Uint8Array) => Uint8Array;

/** The length of every hash in the tree. */
export const HASH_SIZE = 32;

/** Domain separation bytes: a leaf can never be mistaken for an interior node (RFC 9162 2.1.1). */
const LEAF_PREFIX = 0x00;
const NODE_PREFIX = 0x01;

export interface MerkleHasher {
  /** SHA-256(0x00 || record): the hash a record enters the tree as. */
  leafHash(record: Uint8Array): Uint8Array;
  /** SHA-256(0x01 || left || right): the hash of an interior node. */
  nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array;
  /** SHA-256 of no bytes: the root of the tree with no leaves. */
  emptyRoot(): Uint8Array;
}

export function createMerkleHasher(sha256: Sha256): MerkleHasher {
  return {
    leafHash(record) {
      const input = new Uint8Array(1 + record.length);
      input[0] = LEAF_PREFIX;
      input.set(record, 1);
      return sha256(input);
    },
    nodeHash(left, right) {
      const input = new Uint8Array(1 + left.length + right.length);
      input[0] = NODE_PREFIX;
      input.set(left, 1);
      input.set(right, 1 + left.length);
      return sha256(input);
    },
    emptyRoot() {
      return sha256(new Uint8Array(0));
    },
  };
}

/**
 * A caller asked about a tree position that cannot exist (an index at or past the size, an old size
 * above the new one, a size that is not a safe non-negative integer). Proof generation throws this;
 * the server should check requests first and answer invalid_argument naming its own field.
 */
export class MerkleRangeError extends RangeError {
  override readonly name = "MerkleRangeError";
}

/** Throws unless `value` is a usable tree size or index. */
export function assertTreeNumber(name: string, value: number): void {
  if (!isTreeNumber(value)) {
    throw new MerkleRangeError(`${name} must be a non-negative safe integer, got ${value}`);
  }
}

export function isTreeNumber(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/** The split point of RFC 9162's MTH: the largest power of two strictly below n (n >= 2). */
export function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** Byte equality. Tree hashes are public, so no constant-time comparison is needed. */
export function hashesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
