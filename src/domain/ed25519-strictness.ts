import { Point } from "@noble/ed25519";

/**
 * The registry's one Ed25519 rule, shared by the server (which then verifies with node:crypto) and
 * the browser SDK (which verifies with @noble/ed25519's point API): RFC 8032 section 5.1.7
 * verification without the cofactor, with S < L, canonical encodings of A and R, and neither A nor
 * R of small order. OpenSSL already refuses S >= L and non-canonical R (it compares R as bytes), but
 * it accepts non-canonical and small-order keys, and a small-order key makes one fixed signature
 * valid for many messages; noble's strict mode refuses those keys but verifies with the cofactor.
 * Whether a small-order R verifies depends on the runtime: node:crypto accepts it up to Node 22 and
 * refuses it from Node 24 (nodejs/node#64026, which follows WebCrypto's Ed25519), noble accepts it.
 * Checking keys, S and R here, before either library runs, is what makes every side give the same
 * answer on every runtime. Pure: no I/O, no node: imports (the SDK bundles it for browsers).
 */

/** L, the order of the prime-order subgroup that honest keys and signatures live in. */
export const ED25519_GROUP_ORDER: bigint = Point.CURVE().n;

/** What is wrong with a would-be public key, when something is. */
export type Ed25519KeyFault = "not_a_point" | "non_canonical" | "small_order";

/** Why 32 bytes are not an acceptable Ed25519 public key, or undefined when they are. */
export function ed25519PublicKeyFault(publicKey: Uint8Array): Ed25519KeyFault | undefined {
  const point = strictlyDecodedPoint(publicKey);
  if (point === undefined) return isPointUnderLooseDecoding(publicKey) ? "non_canonical" : "not_a_point";
  return point.isSmallOrder() ? "small_order" : undefined;
}

/**
 * The canonical encodings of the 8 points whose order divides the cofactor: the multiples of one
 * point of order 8, which generates them all (test/domain/ed25519-strictness.unit.test.ts refuses each
 * of docs/signatures.md's 8 as an R).
 */
const SMALL_ORDER_ENCODINGS: readonly Uint8Array[] = (() => {
  const generator = Point.fromHex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a");
  const encodings: Uint8Array[] = [];
  for (let multiple = Point.ZERO, k = 0; k < 8; k++, multiple = multiple.add(generator)) encodings.push(multiple.toBytes());
  return encodings;
})();

/**
 * Whether 64 signature bytes carry a small-order R (their first half). Only the identity can make
 * the equation hold, and only for a signer who chose the nonce 0; the other seven never verify. A
 * non-canonical encoding of one of them never verifies either (R is compared as bytes), so the
 * canonical encodings are all there is to check.
 */
export function hasSmallOrderNonce(signature: Uint8Array): boolean {
  return SMALL_ORDER_ENCODINGS.some((encoding) => encoding.every((byte, index) => signature[index] === byte));
}

/** What parsing a signature says of an S of L or more, on the server and in the SDK. */
export const NON_CANONICAL_SCALAR_ERROR = "is not canonical: its S (the last 32 bytes) must be less than the group order L";

/** What parsing a signature with a small-order R says, on the server and in the SDK. */
export const SMALL_ORDER_NONCE_ERROR = "is not acceptable: its R (the first 32 bytes) is a point of small order";

/** Whether 64 signature bytes carry a canonical S (their second half, little-endian), S < L. */
export function hasCanonicalScalar(signature: Uint8Array): boolean {
  return littleEndianInteger(signature.subarray(32, 64)) < ED25519_GROUP_ORDER;
}

/** Bytes read as an unsigned little-endian integer, the way RFC 8032 encodes scalars. */
export function littleEndianInteger(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let index = bytes.length - 1; index >= 0; index--) {
    value = (value << 8n) | BigInt(bytes[index] ?? 0);
  }
  return value;
}

/** The point of an acceptable public key: canonically encoded and not of small order. */
export function acceptedPublicKeyPoint(publicKey: Uint8Array): Point | undefined {
  const point = strictlyDecodedPoint(publicKey);
  return point === undefined || point.isSmallOrder() ? undefined : point;
}

/** The point of a canonical RFC 8032 encoding (section 5.1.3, y < p), or undefined. */
function strictlyDecodedPoint(bytes: Uint8Array): Point | undefined {
  if (bytes.length !== 32) return undefined;
  try {
    return Point.fromBytes(bytes, false);
  } catch {
    return undefined;
  }
}

function isPointUnderLooseDecoding(bytes: Uint8Array): boolean {
  if (bytes.length !== 32) return false;
  try {
    // ZIP-215 decoding reduces y modulo p and allows "-0": it succeeds exactly for the encodings
    // that are points but not canonical ones, given that strict decoding failed.
    Point.fromBytes(bytes, true);
    return true;
  } catch {
    return false;
  }
}
