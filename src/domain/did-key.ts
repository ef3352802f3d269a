import { base58 } from "@scure/base";
import { ed25519PublicKeyFault, type Ed25519KeyFault } from "./ed25519-strictness.js";

/** The multicodec prefix of an Ed25519 public key (0xed, as an unsigned varint). */
const ED25519_MULTICODEC = [0xed, 0x01] as const;

const KEY_FAULTS: Record<Ed25519KeyFault, string> = {
  not_a_point: "did:key holds 32 bytes that are not an Ed25519 point",
  non_canonical: "did:key holds a non-canonical encoding of an Ed25519 point (RFC 8032 requires y < p, and the sign bit clear when x = 0)",
  small_order: "did:key holds a small-order Ed25519 point: a weak key, for which one signature can verify for many messages",
};

// Checking a key decodes a curve point, a square root (docs/performance.md#creates): too much to
// repeat on every publish, while publishers sign many entries with one key. Only accepted DIDs are
// kept, and a memo does not change what the function answers.
const ACCEPTED_CACHE_SIZE = 10_000;
const acceptedKeys = new Map<string, Uint8Array>();

/**
 * Extracts the Ed25519 public key from a `did:key`. Other DID methods are refused with a reason
 * naming the method, so a later resolver (did:web, did:plc) can be plugged in where this is called.
 * Keys that are not canonically encoded points, or are of small order, are refused
 * (docs/signatures.md, "Which keys and signatures are accepted").
 */
export function ed25519KeyFromDid(did: string): Uint8Array | { error: string } {
  const accepted = acceptedKeys.get(did);
  if (accepted !== undefined) return accepted.slice();
  const key = decodeEd25519Did(did);
  if ("error" in key) return key;
  const fault = ed25519PublicKeyFault(key);
  if (fault !== undefined) return { error: KEY_FAULTS[fault] };
  if (acceptedKeys.size >= ACCEPTED_CACHE_SIZE) acceptedKeys.delete(acceptedKeys.keys().next().value as string);
  acceptedKeys.set(did, key.slice());
  return key;
}

function decodeEd25519Did(did: string): Uint8Array | { error: string } {
  const method = /^did:([a-z0-9]+):/.exec(did)?.[1];
  if (method === undefined) return { error: "must be a DID (did:key:z6Mk...)" };
  if (method !== "key") return { error: `unsupported DID method "${method}": use did:key` };
  const multibase = did.slice("did:key:".length);
  if (!multibase.startsWith("z")) {
    return { error: "did:key must be base58btc multibase (starting with z)" };
  }
  let bytes: Uint8Array;
  try {
    bytes = base58.decode(multibase.slice(1));
  } catch {
    return { error: "did:key is not valid base58btc" };
  }
  if (bytes.length !== 34 || bytes[0] !== ED25519_MULTICODEC[0] || bytes[1] !== ED25519_MULTICODEC[1]) {
    return { error: "did:key must hold an Ed25519 public key (z6Mk...)" };
  }
  return bytes.slice(2);
}

/** The did:key of an Ed25519 public key. */
export function didFromEd25519Key(publicKey: Uint8Array): string {
  const bytes = new Uint8Array(34);
  bytes.set(ED25519_MULTICODEC, 0);
  bytes.set(publicKey, 2);
  return `did:key:z${base58.encode(bytes)}`;
}
