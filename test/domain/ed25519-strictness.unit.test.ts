import { readFileSync } from "node:fs";
import * as ed from "@noble/ed25519";
import { describe, expect, it } from "vitest";
import { didFromEd25519Key, ed25519KeyFromDid } from "../../src/domain/did-key.js";
import { createSignatureVerifier, formatSignature, parseSignature } from "../../src/domain/ed25519-signature.js";
import { entrySigningPayload, type EntrySigningFields } from "../../src/domain/signing-payload.js";
import { decodeSignature, signEntry, verifyEd25519, verifyEntrySignature } from "../../src/sdk/signing.js";
import { seededRandom } from "../support/seeded-random.js";
import { ENTRY, ENTRY_SIGNATURE, PUBLIC_KEY_HEX, SEED_HEX } from "../support/published-vector.js";
import { BASE_POINT_SIGNATURE } from "../support/signature-vectors.js";

/**
 * The registry's Ed25519 rule (docs/signatures.md, "Which keys and signatures are accepted"): the
 * server (node:crypto behind the key and S checks) and the SDK (@noble/ed25519's point API) must
 * give the same answer on every vector, refusals and acceptances alike.
 */

const L = 2n ** 252n + 27742317777372353535851937790883648493n;

// The vectors as docs/signatures.md publishes them; the docs are checked against these below.
const SMALL_ORDER_KEYS = [
  {
    order: 1,
    hex: "0100000000000000000000000000000000000000000000000000000000000000",
    did: "did:key:z6MkeXATEjyXENzBXBxgC5EHk2JE5aqd7qMGGtDpLUH1e2Sj",
  },
  {
    order: 2,
    hex: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    did: "did:key:z6MkvQQfodDS9hpfvSLcFA5f2iCB9tBXk3PE5b1P8VVsjtRt",
  },
  {
    order: 4,
    hex: "0000000000000000000000000000000000000000000000000000000000000000",
    did: "did:key:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDnP",
  },
  {
    order: 4,
    hex: "0000000000000000000000000000000000000000000000000000000000000080",
    did: "did:key:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDpb",
  },
  {
    order: 8,
    hex: "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    did: "did:key:z6MksrRtMyx4CiuAvgkmwsiPXKj7ULY8yG49hjvu11gGFbhb",
  },
  {
    order: 8,
    hex: "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    did: "did:key:z6MksrRtMyx4CiuAvgkmwsiPXKj7ULY8yG49hjvu11gGFbjo",
  },
  {
    order: 8,
    hex: "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    did: "did:key:z6Mkh59EgPEuBMugWwYWVMbZFQmHm8V1tcgLejJJTx6d8KB2",
  },
  {
    order: 8,
    hex: "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    did: "did:key:z6Mkh59EgPEuBMugWwYWVMbZFQmHm8V1tcgLejJJTx6d8KDE",
  },
] as const;

const NON_CANONICAL_KEYS = [
  {
    what: "y = 1 (the identity) with the sign bit set",
    hex: "0100000000000000000000000000000000000000000000000000000000000080",
    did: "did:key:z6MkeXATEjyXENzBXBxgC5EHk2JE5aqd7qMGGtDpLUH1e2Uw",
  },
  {
    what: "y = p - 1 (order 2) with the sign bit set",
    hex: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    did: "did:key:z6MkvQQfodDS9hpfvSLcFA5f2iCB9tBXk3PE5b1P8VVsjtU6",
  },
  {
    what: "y = p, read as 0 (order 4)",
    hex: "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    did: "did:key:z6MkvUK5T7wX3YKPL8TakfM6vdwQQtkJSzV8fTKGdgosTh6E",
  },
  {
    what: "y = p with the sign bit set (order 4)",
    hex: "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    did: "did:key:z6MkvUK5T7wX3YKPL8TakfM6vdwQQtkJSzV8fTKGdgosTh8S",
  },
  {
    what: "y = p + 1, read as 1 (the identity)",
    hex: "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    did: "did:key:z6MkvYDV6cfbwNp6jpaZGAcYpZgdfuK59wb3FKdA8t7sBVka",
  },
  {
    what: "y = p + 1 with the sign bit set (the identity)",
    hex: "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    did: "did:key:z6MkvYDV6cfbwNp6jpaZGAcYpZgdfuK59wb3FKdA8t7sBVnn",
  },
  {
    what: "y = p + 3, read as 3 (a point of large order)",
    hex: "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    did: "did:key:z6Mkvg2JPc7mj3oXZCpWHB9ScRB6BvScZqnrR4Ew9Gjrd75G",
  },
] as const;

/** R = B, S = 1; it also holds the equation for half of all messages when A has order 2. */
const UNIVERSAL_SIGNATURE = BASE_POINT_SIGNATURE;

/** R = the identity, S = 0: refused for its R, a point of small order. */
const IDENTITY_NONCE_SIGNATURE = "ed25519:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

// The documented entry's signature (test/support/published-vector.ts)
// with L added to S, and with S = L exactly.
const ENTRY_SIGNATURE_S_PLUS_L = "ed25519:dDwWKhjIjXnrCPSRfrfarI5tlg5m5Mhq_gurhhSWm9nANwKv5hs9GFHizD_zZCehiGZ3iBjZ7xQknXpjhgvIEw";
const ENTRY_SIGNATURE_S_EQUALS_L = "ed25519:dDwWKhjIjXnrCPSRfrfarI5tlg5m5Mhq_gurhhSWm9nt0_VcGmMSWNac96Le-d4UAAAAAAAAAAAAAAAAAAAAEA";

// RFC 8032 section 7.1, TESTs 1 to 3: secret seed, public key, message, signature.
const RFC8032_VECTORS = [
  [
    "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    "",
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
  ],
  [
    "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
    "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    "72",
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
  ],
  [
    "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
    "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
    "af82",
    "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
  ],
] as const;

const server = createSignatureVerifier();
const message = new TextEncoder().encode("any message at all");
const otherMessage = new TextEncoder().encode("another message");

/** Both sides' answers on raw bytes: the server's verifier and the SDK's. */
async function verdicts(signature: Uint8Array, signed: Uint8Array, publicKey: Uint8Array) {
  return {
    server: await server.verify(publicKey, signed, signature),
    sdk: await verifyEd25519(signature, signed, publicKey),
  };
}

/** Both sides' answers on an entry as sent: did:key and signature text, as a publish checks them. */
async function entryVerdicts(fields: EntrySigningFields, signature: string) {
  const bytes = parseSignature(signature);
  const key = ed25519KeyFromDid(fields.publisherDid);
  const serverAccepts = !("error" in bytes) && !("error" in key) && (await server.verify(key, entrySigningPayload(fields), bytes));
  return { server: serverAccepts, sdk: await verifyEntrySignature(fields, signature) };
}

const refusedByBoth = { server: false, sdk: false };
const acceptedByBoth = { server: true, sdk: true };

describe("small-order public keys", () => {
  it("are the eight multiples of a point of order 8, each listed once", () => {
    const generator = ed.Point.fromHex(SMALL_ORDER_KEYS[4].hex);
    const multiples = Array.from({ length: 8 }, (_, k) => (k === 0 ? ed.Point.ZERO : generator.multiply(BigInt(k), false)).toHex());
    expect(new Set(multiples)).toEqual(new Set(SMALL_ORDER_KEYS.map((key) => key.hex)));
    for (const key of SMALL_ORDER_KEYS) {
      expect(didFromEd25519Key(hexBytes(key.hex))).toBe(key.did);
      const point = ed.Point.fromHex(key.hex);
      expect(point.multiply(BigInt(key.order), false).is0()).toBe(true);
      if (key.order > 1) expect(point.multiply(BigInt(key.order / 2), false).is0()).toBe(false);
    }
  });

  it.each(SMALL_ORDER_KEYS)("a did:key of the order-$order point $hex is refused, and nothing verifies with it", async (key) => {
    expect(ed25519KeyFromDid(key.did)).toEqual({ error: expect.stringContaining("small-order") });
    const universal = parseSignature(UNIVERSAL_SIGNATURE) as Uint8Array;
    for (const signed of [message, otherMessage]) {
      expect(await verdicts(universal, signed, hexBytes(key.hex))).toEqual(refusedByBoth);
    }
    expect(await entryVerdicts({ ...ENTRY, publisherDid: key.did }, UNIVERSAL_SIGNATURE)).toEqual(refusedByBoth);
  });
});

describe("non-canonical public keys", () => {
  it.each(NON_CANONICAL_KEYS)("a did:key encoding $what is refused, and nothing verifies with it", async (key) => {
    expect(didFromEd25519Key(hexBytes(key.hex))).toBe(key.did);
    expect(ed25519KeyFromDid(key.did)).toEqual({ error: expect.stringContaining("non-canonical") });
    const universal = parseSignature(UNIVERSAL_SIGNATURE) as Uint8Array;
    for (const signed of [message, otherMessage]) {
      expect(await verdicts(universal, signed, hexBytes(key.hex))).toEqual(refusedByBoth);
    }
    expect(await entryVerdicts({ ...ENTRY, publisherDid: key.did }, UNIVERSAL_SIGNATURE)).toEqual(refusedByBoth);
  });

  it("a did:key whose 32 bytes are not a point at all is refused as such", () => {
    // y = 2 has no x on the curve.
    const notAPoint = didFromEd25519Key(hexBytes(`02${"00".repeat(31)}`));
    expect(ed25519KeyFromDid(notAPoint)).toEqual({ error: expect.stringContaining("not an Ed25519 point") });
  });

  it("the universal signature holds the equation for the identity key; R = the identity is refused when read", async () => {
    const universal = Uint8Array.from(parseSignature(UNIVERSAL_SIGNATURE) as Uint8Array);
    expect(universal.subarray(0, 32)).toEqual(ed.Point.BASE.toBytes());
    expect(littleEndianToInteger(universal.subarray(32))).toBe(1n);
    const identity = hexBytes(SMALL_ORDER_KEYS[0].hex);
    for (const signed of [message, otherMessage]) {
      const k = challenge(await ed.hashes.sha512Async(ed.etc.concatBytes(universal.subarray(0, 32), identity, signed)));
      expect(ed.Point.BASE.subtract(ed.Point.ZERO.multiplyUnsafe(k)).toBytes()).toEqual(universal.subarray(0, 32));
    }
    expect(parseSignature(IDENTITY_NONCE_SIGNATURE)).toEqual({ error: expect.stringContaining("is a point of small order") });
    expect(decodeSignature(IDENTITY_NONCE_SIGNATURE)).toEqual({ error: expect.stringContaining("is a point of small order") });
  });
});

describe("non-canonical S", () => {
  const valid = parseSignature(ENTRY_SIGNATURE) as Uint8Array;
  const withS = (s: bigint) => formatSignature(Uint8Array.from([...valid.subarray(0, 32), ...littleEndian(s)]));
  const s = littleEndianToInteger(valid.subarray(32));

  it("the documented vectors are the entry signature with S + L and with S = L", () => {
    expect(withS(s + L)).toBe(ENTRY_SIGNATURE_S_PLUS_L);
    expect(withS(L)).toBe(ENTRY_SIGNATURE_S_EQUALS_L);
  });

  it.each([
    ["S + L (the same signature, unreduced)", ENTRY_SIGNATURE_S_PLUS_L],
    ["S = L exactly", ENTRY_SIGNATURE_S_EQUALS_L],
    ["S = 2^256 - 1", withS(2n ** 256n - 1n)],
  ])("%s is refused before verification, by the server and the SDK", async (_label, signature) => {
    expect(parseSignature(signature)).toEqual({ error: expect.stringContaining("group order") });
    expect(decodeSignature(signature)).toEqual({ error: expect.stringContaining("group order") });
    const bytes = Buffer.from(signature.slice("ed25519:".length), "base64url");
    expect(await verdicts(bytes, entrySigningPayload(ENTRY), hexBytes(PUBLIC_KEY_HEX))).toEqual(refusedByBoth);
    expect(await entryVerdicts(ENTRY, signature)).toEqual(refusedByBoth);
  });

  it("S = L - 1 is canonical: it is read, then does not verify on either side", async () => {
    const signature = withS(L - 1n);
    expect(parseSignature(signature)).toBeInstanceOf(Uint8Array);
    expect(decodeSignature(signature)).toBeInstanceOf(Uint8Array);
    expect(await entryVerdicts(ENTRY, signature)).toEqual(refusedByBoth);
  });
});

describe("R, and keys with a small-order component (where a cofactor would change the answer)", () => {
  const keyScalar = async (seedHex: string) => (await ed.utils.getExtendedPublicKeyAsync(hexBytes(seedHex))).scalar;

  /** A signature with a chosen nonce point R = [r]B + extra, encoded as given or canonically. */
  async function signWithNonce(options: {
    scalar: bigint;
    publicKey: Uint8Array;
    signed: Uint8Array;
    r: bigint;
    extra?: ed.Point;
    encodedR?: Uint8Array;
  }): Promise<Uint8Array> {
    const point = ed.Point.BASE.multiply(options.r, false).add(options.extra ?? ed.Point.ZERO);
    const encodedR = options.encodedR ?? point.toBytes();
    const k = challenge(await ed.hashes.sha512Async(ed.etc.concatBytes(encodedR, options.publicKey, options.signed)));
    return Uint8Array.from([...encodedR, ...littleEndian((options.r + k * options.scalar) % L)]);
  }

  // RFC 8032 allows it, noble accepts it, and node:crypto accepts it up to Node 22 but not from
  // Node 24 on: left to the libraries, the answer would depend on where it is checked.
  it("a canonical small-order R (the identity, S = k·a) holds the equation, and is refused by both", async () => {
    const scalar = await keyScalar(SEED_HEX);
    const signature = await signWithNonce({ scalar, publicKey: hexBytes(PUBLIC_KEY_HEX), signed: message, r: 0n });
    expect(signature.subarray(0, 32)).toEqual(hexBytes(SMALL_ORDER_KEYS[0].hex));
    expect(await ed.verifyAsync(signature, message, hexBytes(PUBLIC_KEY_HEX), { zip215: false })).toBe(true);
    expect(await verdicts(signature, message, hexBytes(PUBLIC_KEY_HEX))).toEqual(refusedByBoth);
    const text = formatSignature(signature);
    expect(parseSignature(text)).toEqual({ error: expect.stringContaining("is a point of small order") });
    expect(decodeSignature(text)).toEqual({ error: expect.stringContaining("is a point of small order") });
  });

  it.each(SMALL_ORDER_KEYS)("a signature whose R is the order-$order point $hex is refused when read, by both", async (point) => {
    const text = formatSignature(Uint8Array.from([...hexBytes(point.hex), ...littleEndian(12345n)]));
    expect(parseSignature(text)).toEqual({ error: "is not acceptable: its R (the first 32 bytes) is a point of small order" });
    expect(decodeSignature(text)).toEqual({ error: "is not acceptable: its R (the first 32 bytes) is a point of small order" });
    expect(await entryVerdicts(ENTRY, text)).toEqual(refusedByBoth);
  });

  it("the same R encoded non-canonically (y = p + 1) is refused by both", async () => {
    const scalar = await keyScalar(SEED_HEX);
    const encodedR = hexBytes(NON_CANONICAL_KEYS[4].hex);
    const signature = await signWithNonce({ scalar, publicKey: hexBytes(PUBLIC_KEY_HEX), signed: message, r: 0n, encodedR });
    expect(await verdicts(signature, message, hexBytes(PUBLIC_KEY_HEX))).toEqual(refusedByBoth);
    // Under ZIP-215 decoding it would be valid: the refusal comes from the encoding alone.
    expect(await ed.verifyAsync(signature, message, hexBytes(PUBLIC_KEY_HEX), { zip215: true })).toBe(true);
  });

  it("an R with a small-order component is refused by both, though noble's cofactored verify accepts it", async () => {
    const scalar = await keyScalar(SEED_HEX);
    const extra = ed.Point.fromHex(SMALL_ORDER_KEYS[4].hex);
    const signature = await signWithNonce({ scalar, publicKey: hexBytes(PUBLIC_KEY_HEX), signed: message, r: 12345n, extra });
    expect(await ed.verifyAsync(signature, message, hexBytes(PUBLIC_KEY_HEX), { zip215: false })).toBe(true);
    expect(await verdicts(signature, message, hexBytes(PUBLIC_KEY_HEX))).toEqual(refusedByBoth);
  });

  it("a key with a small-order component is accepted, and verified without the cofactor on both sides", async () => {
    const scalar = await keyScalar(SEED_HEX);
    const torsion = ed.Point.fromHex(SMALL_ORDER_KEYS[4].hex);
    const mixedKey = ed.Point.fromHex(PUBLIC_KEY_HEX).add(torsion).toBytes();
    expect(ed25519KeyFromDid(didFromEd25519Key(mixedKey))).toEqual(mixedKey);
    // [S]B - [k]A' = R - [k]T: the equation holds exactly when 8 divides k.
    const outcomes = new Set<string>();
    for (let index = 0; outcomes.size < 2 || index < 8; index++) {
      const signed = new TextEncoder().encode(`message ${index}`);
      const signature = await signWithNonce({ scalar, publicKey: mixedKey, signed, r: 777n + BigInt(index) });
      const k = challenge(await ed.hashes.sha512Async(ed.etc.concatBytes(signature.subarray(0, 32), mixedKey, signed)));
      const holds = k % 8n === 0n;
      expect(await verdicts(signature, signed, mixedKey)).toEqual(holds ? acceptedByBoth : refusedByBoth);
      expect(await ed.verifyAsync(signature, signed, mixedKey, { zip215: false })).toBe(true);
      outcomes.add(String(holds));
    }
  });
});

describe("ordinary keys and signatures", () => {
  it.each(RFC8032_VECTORS)(
    "RFC 8032 key %s: its signature is accepted by both, a changed one by neither",
    async (_seed, publicKeyHex, messageHex, signatureHex) => {
      const publicKey = hexBytes(publicKeyHex);
      const signed = hexBytes(messageHex);
      const signature = hexBytes(signatureHex);
      expect(ed25519KeyFromDid(didFromEd25519Key(publicKey))).toEqual(publicKey);
      expect(await verdicts(signature, signed, publicKey)).toEqual(acceptedByBoth);
      expect(await verdicts(signature, Uint8Array.from([...signed, 0]), publicKey)).toEqual(refusedByBoth);
    },
  );

  it("the documented entry signature is accepted by both", async () => {
    expect(await entryVerdicts(ENTRY, ENTRY_SIGNATURE)).toEqual(acceptedByBoth);
  });

  it("random keys: signatures are accepted by both; any flipped bit in R, S or the message is refused by both", async () => {
    const random = seededRandom(9_003);
    const bytes = (length: number) => Uint8Array.from({ length }, () => Math.floor(random() * 256));
    for (let round = 0; round < 24; round++) {
      const seed = bytes(32);
      const publicKey = await ed.getPublicKeyAsync(seed);
      const signed = bytes(1 + Math.floor(random() * 200));
      const signature = await ed.signAsync(signed, seed);
      expect(ed25519KeyFromDid(didFromEd25519Key(publicKey))).toEqual(publicKey);
      expect(await verdicts(signature, signed, publicKey)).toEqual(acceptedByBoth);

      const flipped = Uint8Array.from(signature);
      const bit = Math.floor(random() * 512);
      flipped[bit >> 3] = (flipped[bit >> 3] ?? 0) ^ (1 << (bit & 7));
      expect(await verdicts(flipped, signed, publicKey)).toEqual(refusedByBoth);
      const changed = Uint8Array.from(signed);
      changed[0] = (changed[0] ?? 0) ^ 1;
      expect(await verdicts(signature, changed, publicKey)).toEqual(refusedByBoth);
      expect(await verdicts(bytes(64), signed, publicKey)).toEqual(refusedByBoth);
    }
  });

  it("a key pair from the SDK signs entries both sides accept", async () => {
    const signature = await signEntry(ENTRY, hexBytes(SEED_HEX));
    expect(signature).toBe(ENTRY_SIGNATURE);
    expect(await entryVerdicts(ENTRY, signature)).toEqual(acceptedByBoth);
  });
});

describe("docs/signatures.md publishes these vectors", () => {
  const docs = readFileSync(new URL("../../docs/signatures.md", import.meta.url), "utf8");

  it.each([
    ...SMALL_ORDER_KEYS.flatMap((key) => [key.hex, key.did]),
    ...NON_CANONICAL_KEYS.flatMap((key) => [key.hex, key.did]),
    UNIVERSAL_SIGNATURE,
    IDENTITY_NONCE_SIGNATURE,
    ENTRY_SIGNATURE_S_PLUS_L,
    ENTRY_SIGNATURE_S_EQUALS_L,
  ])("docs/signatures.md contains %s", (value) => {
    expect(docs).toContain(value);
  });
});

/** k = SHA-512(R || A || M) as a little-endian integer, reduced modulo L. */
function challenge(digest: Uint8Array): bigint {
  return littleEndianToInteger(digest) % L;
}

function littleEndian(value: bigint): Uint8Array {
  return Uint8Array.from({ length: 32 }, (_, index) => Number((value >> BigInt(8 * index)) & 0xffn));
}

function littleEndianToInteger(bytes: Uint8Array): bigint {
  return bytes.reduceRight((value, byte) => (value << 8n) | BigInt(byte), 0n);
}

function hexBytes(text: string): Uint8Array {
  return Uint8Array.from(Buffer.from(text, "hex"));
}
