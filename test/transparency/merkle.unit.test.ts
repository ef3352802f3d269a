import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MerkleRangeError } from "../../src/transparency/merkle.js";
import { nodeMerkleHasher as hasher } from "../../src/transparency/node-merkle-hasher.js";
import { consistencyProof, inclusionProof, rootHash } from "../../src/transparency/proofs.js";
import {
  appendLeaves,
  storedHashCount,
  storedHashIndex,
  type HashReader,
  type StoredHash,
  type StoredHashAddress,
} from "../../src/transparency/stored-hashes.js";
import { verifyConsistency, verifyInclusion } from "../../src/transparency/verify.js";

/**
 * The Merkle core against a reference written here straight from RFC 9162 section 2.1's recursive
 * definitions (MTH, PATH, PROOF/SUBPROOF), over record bytes rather than stored hashes, so the two
 * share nothing but SHA-256.
 */

const sha256 = (...parts: Uint8Array[]) => new Uint8Array(createHash("sha256").update(Buffer.concat(parts)).digest());
const byte = (value: number) => Uint8Array.of(value);

function referenceMth(records: readonly Uint8Array[]): Uint8Array {
  const n = records.length;
  if (n === 0) return sha256();
  if (n === 1) return sha256(byte(0), records[0]!);
  const k = largestPowerOfTwoLessThan(n);
  return sha256(byte(1), referenceMth(records.slice(0, k)), referenceMth(records.slice(k)));
}

function referencePath(m: number, records: readonly Uint8Array[]): Uint8Array[] {
  const n = records.length;
  if (n === 1) return [];
  const k = largestPowerOfTwoLessThan(n);
  if (m < k) return [...referencePath(m, records.slice(0, k)), referenceMth(records.slice(k))];
  return [...referencePath(m - k, records.slice(k)), referenceMth(records.slice(0, k))];
}

function referenceProof(m: number, records: readonly Uint8Array[]): Uint8Array[] {
  return referenceSubproof(m, records, true);
}

function referenceSubproof(m: number, records: readonly Uint8Array[], wholeOldTree: boolean): Uint8Array[] {
  const n = records.length;
  if (m === n) return wholeOldTree ? [] : [referenceMth(records)];
  const k = largestPowerOfTwoLessThan(n);
  if (m <= k) return [...referenceSubproof(m, records.slice(0, k), wholeOldTree), referenceMth(records.slice(k))];
  return [...referenceSubproof(m - k, records.slice(k), false), referenceMth(records.slice(0, k))];
}

function largestPowerOfTwoLessThan(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** Stored hashes in a Map, refusing any hash that a tree of `size` has not completed. */
class MemoryHashStore {
  readonly hashes = new Map<string, Uint8Array>();

  write(stored: readonly StoredHash[]): void {
    for (const { level, index, hash } of stored) {
      const key = `${level}/${index}`;
      const previous = this.hashes.get(key);
      if (previous && !Buffer.from(previous).equals(hash)) throw new Error(`stored hash ${key} rewritten`);
      this.hashes.set(key, hash);
    }
  }

  readerAt(size: number): HashReader {
    return {
      readHashes: (addresses: readonly StoredHashAddress[]) =>
        addresses.map(({ level, index }) => {
          if ((index + 1) * 2 ** level > size) throw new Error(`${level}/${index} is not complete at size ${size}`);
          const hash = this.hashes.get(`${level}/${index}`);
          if (!hash) throw new Error(`${level}/${index} was never stored`);
          return hash;
        }),
    };
  }
}

async function appendOneByOne(records: readonly Uint8Array[]): Promise<{ store: MemoryHashStore; roots: Uint8Array[] }> {
  const store = new MemoryHashStore();
  const roots = [hasher.emptyRoot()];
  for (const [size, record] of records.entries()) {
    const result = await appendLeaves(size, [hasher.leafHash(record)], store.readerAt(size), hasher);
    store.write(result.storedHashes);
    roots.push(result.root);
  }
  return { store, roots };
}

const records = Array.from({ length: 64 }, (_, i) => new TextEncoder().encode(`change record ${i}`));
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const hexes = (list: readonly Uint8Array[]) => list.map(hex);
const flipped = (hash: Uint8Array) => hash.map((value, i) => (i === 7 ? value ^ 0x20 : value));

describe("known answers", () => {
  // Leaf inputs, complete-subtree hashes and roots for sizes 0..8 from transparency-dev/merkle,
  // testonly/constants.go (LeafInputs, NodeHashes, RootHashes), the vectors Certificate
  // Transparency's implementations are checked against.
  const leafInputs = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"];
  const completeSubtreeHashes = [
    [
      "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
      "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
      "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
      "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
    ],
    [
      "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
    ],
    [
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    ["5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"],
  ];
  const rootsBySize = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
  ];
  const vectorRecords = leafInputs.map((input) => new Uint8Array(Buffer.from(input, "hex")));

  it("appending the vector leaves yields the published roots for every size", async () => {
    const { store, roots } = await appendOneByOne(vectorRecords);
    expect(hexes(roots)).toEqual(rootsBySize);
    for (let size = 0; size <= 8; size++) {
      expect(hex(await rootHash(size, store.readerAt(size), hasher))).toBe(rootsBySize[size]);
    }
  });

  it("stores exactly the published complete-subtree hashes", async () => {
    const { store } = await appendOneByOne(vectorRecords);
    const published = completeSubtreeHashes.flatMap((level, l) => level.map((hash, i) => [`${l}/${i}`, hash]));
    expect([...store.hashes].map(([key, hash]) => [key, hex(hash)]).sort()).toEqual(published.sort());
  });

  it("the reference agrees with the published roots, so it can vouch for the sizes beyond 8", () => {
    for (let size = 0; size <= 8; size++) expect(hex(referenceMth(vectorRecords.slice(0, size)))).toBe(rootsBySize[size]);
  });
});

describe("proofs from stored hashes match RFC 9162's definitions", async () => {
  const { store, roots } = await appendOneByOne(records);

  it("roots of every size 1..64", async () => {
    for (let size = 1; size <= 64; size++) {
      const expected = hex(referenceMth(records.slice(0, size)));
      expect(hex(await rootHash(size, store.readerAt(size), hasher))).toBe(expected);
      expect(hex(roots[size]!)).toBe(expected);
    }
  });

  it("inclusion proofs for every index of every size 1..64", async () => {
    for (let size = 1; size <= 64; size++) {
      for (let index = 0; index < size; index++) {
        const proof = await inclusionProof(index, size, store.readerAt(size), hasher);
        expect(hexes(proof), `index ${index} size ${size}`).toEqual(hexes(referencePath(index, records.slice(0, size))));
      }
    }
  });

  it("consistency proofs for every old size of every size 1..64", async () => {
    for (let newSize = 1; newSize <= 64; newSize++) {
      for (let oldSize = 1; oldSize < newSize; oldSize++) {
        const proof = await consistencyProof(oldSize, newSize, store.readerAt(newSize), hasher);
        expect(hexes(proof), `${oldSize} -> ${newSize}`).toEqual(hexes(referenceProof(oldSize, records.slice(0, newSize))));
      }
    }
  });

  it("the empty and identical cases have empty consistency proofs", async () => {
    expect(await consistencyProof(0, 5, store.readerAt(5), hasher)).toEqual([]);
    expect(await consistencyProof(5, 5, store.readerAt(5), hasher)).toEqual([]);
    expect(hex(await rootHash(0, store.readerAt(0), hasher))).toBe(hex(sha256()));
  });

  it("refuses positions outside the tree", async () => {
    const reader = store.readerAt(64);
    await expect(inclusionProof(5, 5, reader, hasher)).rejects.toBeInstanceOf(MerkleRangeError);
    await expect(inclusionProof(-1, 5, reader, hasher)).rejects.toBeInstanceOf(MerkleRangeError);
    await expect(inclusionProof(0.5, 5, reader, hasher)).rejects.toBeInstanceOf(MerkleRangeError);
    await expect(consistencyProof(6, 5, reader, hasher)).rejects.toBeInstanceOf(MerkleRangeError);
    await expect(rootHash(2 ** 53, reader, hasher)).rejects.toBeInstanceOf(MerkleRangeError);
  });
});

describe("verifying inclusion", async () => {
  const { store, roots } = await appendOneByOne(records);
  const leaves = records.map((record) => hasher.leafHash(record));
  const cases: { index: number; size: number; proof: Uint8Array[] }[] = [];
  for (let size = 1; size <= 64; size++) {
    for (let index = 0; index < size; index++) {
      cases.push({ index, size, proof: await inclusionProof(index, size, store.readerAt(size), hasher) });
    }
  }

  it("accepts every genuine proof", () => {
    for (const { index, size, proof } of cases) {
      expect(verifyInclusion(leaves[index]!, index, size, proof, roots[size]!, hasher), `${index}/${size}`).toBe(true);
    }
  });

  it("rejects a tampered leaf and every tampered proof element", () => {
    for (const { index, size, proof } of cases) {
      expect(verifyInclusion(flipped(leaves[index]!), index, size, proof, roots[size]!, hasher)).toBe(false);
      for (let i = 0; i < proof.length; i++) {
        const tampered = proof.map((hash, j) => (j === i ? flipped(hash) : hash));
        expect(verifyInclusion(leaves[index]!, index, size, tampered, roots[size]!, hasher)).toBe(false);
      }
    }
  });

  it("rejects the proof under another index, or under another size with that size's root", () => {
    for (const { index, size, proof } of cases) {
      for (const other of [index - 1, index + 1]) {
        if (other < 0 || other >= size) continue;
        expect(verifyInclusion(leaves[index]!, other, size, proof, roots[size]!, hasher), `${index}->${other}/${size}`).toBe(false);
      }
      for (const otherSize of [size - 1, size + 1]) {
        if (otherSize <= index || otherSize > 64) continue;
        expect(verifyInclusion(leaves[index]!, index, otherSize, proof, roots[otherSize]!, hasher)).toBe(false);
      }
    }
  });

  it("rejects a truncated or extended proof and an index past the size", () => {
    for (const { index, size, proof } of cases) {
      if (proof.length > 0) {
        expect(verifyInclusion(leaves[index]!, index, size, proof.slice(0, -1), roots[size]!, hasher)).toBe(false);
      }
      expect(verifyInclusion(leaves[index]!, index, size, [...proof, leaves[0]!], roots[size]!, hasher)).toBe(false);
    }
    expect(verifyInclusion(leaves[3]!, 3, 3, [], roots[3]!, hasher)).toBe(false);
  });

  it("rejects hashes that are not 32 bytes, and throws only for sizes that are not safe integers", () => {
    const proof = cases.find((c) => c.index === 2 && c.size === 5)!.proof;
    expect(verifyInclusion(leaves[2]!, 2, 5, [...proof.slice(0, -1), proof.at(-1)!.slice(1)], roots[5]!, hasher)).toBe(false);
    expect(verifyInclusion(leaves[2]!.slice(0, 31), 2, 5, proof, roots[5]!, hasher)).toBe(false);
    expect(() => verifyInclusion(leaves[2]!, 2, Number.NaN, proof, roots[5]!, hasher)).toThrow(MerkleRangeError);
    expect(() => verifyInclusion(leaves[2]!, -2, 5, proof, roots[5]!, hasher)).toThrow(MerkleRangeError);
  });
});

describe("verifying consistency", async () => {
  const { store, roots } = await appendOneByOne(records);
  const cases: { oldSize: number; newSize: number; proof: Uint8Array[] }[] = [];
  for (let newSize = 1; newSize <= 64; newSize++) {
    for (let oldSize = 0; oldSize <= newSize; oldSize++) {
      cases.push({ oldSize, newSize, proof: await consistencyProof(oldSize, newSize, store.readerAt(newSize), hasher) });
    }
  }
  const root = (size: number) => roots[size]!;

  it("accepts every genuine proof, including from the empty tree and to the same size", () => {
    for (const { oldSize, newSize, proof } of cases) {
      expect(verifyConsistency(oldSize, newSize, root(oldSize), root(newSize), proof, hasher), `${oldSize}->${newSize}`).toBe(true);
    }
  });

  it("rejects every tampered proof element and a tampered root on either side", () => {
    for (const { oldSize, newSize, proof } of cases) {
      for (let i = 0; i < proof.length; i++) {
        const tampered = proof.map((hash, j) => (j === i ? flipped(hash) : hash));
        expect(verifyConsistency(oldSize, newSize, root(oldSize), root(newSize), tampered, hasher)).toBe(false);
      }
      expect(verifyConsistency(oldSize, newSize, flipped(root(oldSize)), root(newSize), proof, hasher)).toBe(false);
      // Every tree extends the empty one, so from size 0 the new root is not part of the claim.
      if (oldSize === 0) continue;
      expect(verifyConsistency(oldSize, newSize, root(oldSize), flipped(root(newSize)), proof, hasher)).toBe(false);
    }
  });

  it("rejects swapped roots and swapped sizes", () => {
    for (const { oldSize, newSize, proof } of cases) {
      if (oldSize === newSize) continue;
      expect(verifyConsistency(oldSize, newSize, root(newSize), root(oldSize), proof, hasher)).toBe(false);
      expect(verifyConsistency(newSize, oldSize, root(newSize), root(oldSize), proof, hasher)).toBe(false);
    }
  });

  it("rejects the proof between other sizes, each with its own root", () => {
    for (const { oldSize, newSize, proof } of cases) {
      if (oldSize === 0 || oldSize === newSize) continue;
      for (const [otherOld, otherNew] of [
        [oldSize - 1, newSize],
        [oldSize + 1, newSize],
        [oldSize, newSize - 1],
        [oldSize, newSize + 1],
      ] as const) {
        if (otherOld < 1 || otherOld >= otherNew || otherNew > 64) continue;
        const accepted = verifyConsistency(otherOld, otherNew, root(otherOld), root(otherNew), proof, hasher);
        expect(accepted, `${oldSize}->${newSize} as ${otherOld}->${otherNew}`).toBe(false);
      }
    }
  });

  it("rejects a truncated or extended proof", () => {
    for (const { oldSize, newSize, proof } of cases) {
      if (proof.length > 0) {
        expect(verifyConsistency(oldSize, newSize, root(oldSize), root(newSize), proof.slice(0, -1), hasher)).toBe(false);
      }
      expect(verifyConsistency(oldSize, newSize, root(oldSize), root(newSize), [...proof, root(1)], hasher)).toBe(false);
    }
  });

  it("treats the empty tree's root as part of the claim", () => {
    expect(verifyConsistency(0, 5, root(5), root(5), [], hasher)).toBe(false);
    expect(() => verifyConsistency(1, 2 ** 53, root(1), root(2), [], hasher)).toThrow(MerkleRangeError);
  });
});

describe("appending", () => {
  const many = Array.from({ length: 300 }, (_, i) => new TextEncoder().encode(`record ${i}`));

  it("batches of any size store the same hashes and reach the same roots as one leaf at a time", async () => {
    const single = await appendOneByOne(many);
    for (const pattern of [[1], [2], [3], [7, 1, 64], [256, 44], [300], [5, 11, 0, 17, 100]]) {
      const batched = new MemoryHashStore();
      let size = 0;
      for (let turn = 0; size < many.length; turn++) {
        const count = Math.min(pattern[turn % pattern.length]!, many.length - size);
        const leafHashes = many.slice(size, size + count).map((record) => hasher.leafHash(record));
        const result = await appendLeaves(size, leafHashes, batched.readerAt(size), hasher);
        batched.write(result.storedHashes);
        expect(result.size).toBe(size + count);
        size = result.size;
        expect(hex(result.root), `pattern ${pattern} at ${size}`).toBe(hex(single.roots[size]!));
      }
      expect([...batched.hashes.keys()].sort()).toEqual([...single.store.hashes.keys()].sort());
      for (const [key, hash] of batched.hashes) expect(hex(hash)).toBe(hex(single.store.hashes.get(key)!));
    }
  });

  it("stores each complete subtree's MTH once, and nothing for incomplete ones", async () => {
    const { store } = await appendOneByOne(many);
    let expectedCount = 0;
    for (let level = 0; 2 ** level <= many.length; level++) {
      for (let index = 0; (index + 1) * 2 ** level <= many.length; index++) {
        expectedCount += 1;
        const leaves = many.slice(index * 2 ** level, (index + 1) * 2 ** level);
        expect(hex(store.hashes.get(`${level}/${index}`)!), `${level}/${index}`).toBe(hex(referenceMth(leaves)));
      }
    }
    expect(store.hashes.size).toBe(expectedCount);
  });

  it("writes in storedHashIndex order, so each append fills the next run of integer keys", async () => {
    const store = new MemoryHashStore();
    let size = 0;
    for (const count of [1, 1, 2, 5, 9, 64, 100, 118]) {
      const leafHashes = many.slice(size, size + count).map((record) => hasher.leafHash(record));
      const { storedHashes } = await appendLeaves(size, leafHashes, store.readerAt(size), hasher);
      store.write(storedHashes);
      const first = storedHashCount(size);
      expect(storedHashes.map(storedHashIndex)).toEqual(storedHashes.map((_, i) => first + i));
      size += count;
      expect(storedHashCount(size)).toBe(first + storedHashes.length);
    }
    // Near twice the leaf count, so exact only up to 2^52 leaves; past that it refuses to round.
    expect(storedHashCount(2 ** 52)).toBe(2 ** 53 - 1);
    expect(() => storedHashCount(2 ** 52 + 1)).toThrow(MerkleRangeError);
  });

  it("reads only the old tree's right edge, in one call", async () => {
    const { store } = await appendOneByOne(many.slice(0, 13));
    const calls: StoredHashAddress[][] = [];
    const reader: HashReader = {
      readHashes: (addresses) => {
        calls.push([...addresses]);
        return store.readerAt(13).readHashes(addresses);
      },
    };
    await appendLeaves(13, [hasher.leafHash(many[13]!)], reader, hasher);
    // 13 = 8 + 4 + 1: the subtrees of leaves 0-7, 8-11 and 12.
    expect(calls).toEqual([
      [
        { level: 3, index: 0 },
        { level: 2, index: 2 },
        { level: 0, index: 12 },
      ],
    ]);
  });
});
