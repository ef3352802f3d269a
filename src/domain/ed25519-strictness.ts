import { Point } from "@noble/ed25519";

/**
 * The registry's one Ed25519 rule, shared by the server (which then verifies with node:crypto) and
 * the browser SDK (which verifies with @noble/ed25519's point API): RFC 8032 section 5.1.7
 * verification without the cofactor, with S < L, canonical encodings of A and R, and A not of small
 * order. OpenSSL already refuses S >= L and non-canonical R (it compares R as bytes), but it
 * accepts non-canonical and small-order keys, and a small-order key makes one fixed signature valid
 * for many messages; noble's strict mode refuses those keys but verifies with the cofactor. Checking
 * keys and S here, before either library runs, is what makes both sides give the same answer.
 * Pure: no I/O, no node: imports (the SDK bundles it for browsers).
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
