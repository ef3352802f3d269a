import * as ed from "@noble/ed25519";
import { base64urlnopad } from "@scure/base";
import { didFromEd25519Key, ed25519KeyFromDid } from "../domain/did-key.js";
import {
  acceptedPublicKeyPoint,
  ED25519_GROUP_ORDER,
  hasCanonicalScalar,
  hasSmallOrderNonce,
  littleEndianInteger,
  NON_CANONICAL_SCALAR_ERROR,
  SMALL_ORDER_NONCE_ERROR,
} from "../domain/ed25519-strictness.js";
import { entrySigningPayload, revocationSigningPayload, type EntrySigningFields } from "../domain/signing-payload.js";
import {
  lifecycleSigningPayload,
  moderationSigningPayload,
  type LifecyclePayloadFields,
  type ModerationPayloadFields,
} from "../domain/action-payloads.js";

/**
 * Client-side signing for registry entries and revocations. Runs in browsers as well as Node 20+:
 * no Node imports, and only the async @noble/ed25519 API, whose SHA-512 comes from WebCrypto
 * (`crypto.subtle`, which browsers offer only in secure contexts such as https or localhost).
 */

/** An Ed25519 key pair. The private key is the 32-byte RFC 8032 seed, never the expanded key. */
export interface KeyPair {
  readonly privateKey: Uint8Array;
  readonly publicKey: Uint8Array;
  /** The `did:key` of the public key: what an entry's `publisherDid` must be. */
  readonly did: string;
}

const SEED_LENGTH = 32;
const SIGNATURE_LENGTH = 64;
const SIGNATURE_PREFIX = "ed25519:";

/** A fresh key pair from the platform's cryptographic random source. */
export async function generateKeyPair(): Promise<KeyPair> {
  return keyPairFromSeed(ed.utils.randomSecretKey());
}

/** The key pair of a 32-byte seed; the same seed always gives the same keys and DID. */
export async function keyPairFromSeed(seed: Uint8Array): Promise<KeyPair> {
  const privateKey = checkedSeed(seed);
  const publicKey = await ed.getPublicKeyAsync(privateKey);
  return { privateKey, publicKey, did: didFromEd25519Key(publicKey) };
}

/**
 * Signs an entry's create payload and returns the value for its `signature` field
 * (`ed25519:<base64url>`). It does not check that the key belongs to `publisherDid`; the registry
 * verifies with the key inside `publisherDid`, so a mismatched key yields a refused entry.
 */
export async function signEntry(fields: EntrySigningFields, privateKey: Uint8Array): Promise<string> {
  return signPayload(entrySigningPayload(fields), privateKey);
}

/**
 * Signs a revocation. `entryDid` must be the DID exactly as it will be addressed in
 * `DELETE /v1/entries/{did}` (with or without `@version`), because that is what the server signs over.
 */
export async function signRevocation(entryDid: string, reason: string, privateKey: Uint8Array): Promise<string> {
  return signPayload(revocationSigningPayload(entryDid, reason), privateKey);
}

/**
 * Whether `signature` is a valid signature of the entry by the key inside its `publisherDid`.
 * Malformed signatures and DIDs that are not Ed25519 `did:key`s give false rather than throwing.
 */
export async function verifyEntrySignature(fields: EntrySigningFields, signature: string): Promise<boolean> {
  return verifyPayload(entrySigningPayload(fields), signature, fields.publisherDid);
}

/** Whether `signature` is a valid revocation of `entryDid` for `reason` by `signerDid`'s key. */
export async function verifyRevocationSignature(entryDid: string, reason: string, signature: string, signerDid: string): Promise<boolean> {
  return verifyPayload(revocationSigningPayload(entryDid, reason), signature, signerDid);
}

/**
 * Whether 64 signature bytes are a valid signature of `message` by the 32-byte `publicKey`, under
 * the registry's rule (docs/signatures.md): S < L, an R and a canonical key that are not of small
 * order, and the cofactorless equation [S]B = R + [k]A checked by encoding, so R must be canonical
 * too. That is exactly the server's answer (node:crypto after the same key, S and R checks).
 * noble's own `verify` cannot give it: with `zip215: false` it multiplies by the cofactor,
 * accepting signatures whose R carries a small-order component that OpenSSL refuses. Never throws
 * on malformed input.
 */
export async function verifyEd25519(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): Promise<boolean> {
  if (signature.length !== SIGNATURE_LENGTH || !hasCanonicalScalar(signature) || hasSmallOrderNonce(signature)) return false;
  const a = acceptedPublicKeyPoint(publicKey);
  if (a === undefined) return false;
  const r = signature.subarray(0, 32);
  const s = littleEndianInteger(signature.subarray(32, 64));
  const digest = await ed.hashes.sha512Async(ed.etc.concatBytes(r, publicKey, message));
  const k = littleEndianInteger(digest) % ED25519_GROUP_ORDER;
  // Verification handles public values only, so the faster variable-time multiplications are fine.
  const expectedR = ed.Point.BASE.multiplyUnsafe(s).subtract(a.multiplyUnsafe(k));
  return equalBytes(expectedR.toBytes(), r);
}

/** Formats 64 signature bytes as `ed25519:<base64url without padding>`. */
export function encodeSignature(bytes: Uint8Array): string {
  if (bytes.length !== SIGNATURE_LENGTH) {
    throw new RangeError(`an Ed25519 signature is ${SIGNATURE_LENGTH} bytes, got ${bytes.length}`);
  }
  return SIGNATURE_PREFIX + base64urlnopad.encode(bytes);
}

/**
 * Decodes `ed25519:<base64url>` into its 64 bytes, or says why it is not one. Like the registry,
 * it refuses an S that is not below the group order L and an R of small order.
 */
export function decodeSignature(text: string): Uint8Array | { error: string } {
  if (!text.startsWith(SIGNATURE_PREFIX)) return { error: "must start with ed25519:" };
  const bytes = decodeBase64url(text.slice(SIGNATURE_PREFIX.length));
  if (bytes === undefined || bytes.length !== SIGNATURE_LENGTH) {
    return { error: "must be ed25519: followed by the unpadded base64url of 64 bytes" };
  }
  if (!hasCanonicalScalar(bytes)) return { error: NON_CANONICAL_SCALAR_ERROR };
  if (hasSmallOrderNonce(bytes)) return { error: SMALL_ORDER_NONCE_ERROR };
  return bytes;
}

/** The base64url (no padding) text of a private key seed, as `registry key generate` prints it. */
export function encodePrivateKey(seed: Uint8Array): string {
  return base64urlnopad.encode(checkedSeed(seed));
}

/** Decodes a base64url private key seed, or says why it is not one. */
export function decodePrivateKey(text: string): Uint8Array | { error: string } {
  const bytes = decodeBase64url(text.trim());
  if (bytes === undefined || bytes.length !== SEED_LENGTH) {
    return { error: `must be the unpadded base64url of a ${SEED_LENGTH}-byte Ed25519 seed` };
  }
  return bytes;
}

/** Unpadded base64url, the encoding the registry uses for keys and signatures. */
export function encodeBase64url(bytes: Uint8Array): string {
  return base64urlnopad.encode(bytes);
}

/**
 * Signs a lifecycle request (registry.lifecycle.v1): `by` must be the DID of the key, which is
 * also the subject of the token that sends it; `issuedAt` as `toISOString()` writes it.
 */
export async function signLifecycle(fields: LifecyclePayloadFields, privateKey: Uint8Array): Promise<string> {
  return signPayload(lifecycleSigningPayload(fields), privateKey);
}

/** Signs a moderation request (registry.moderation.v1), as signLifecycle does. */
export async function signModeration(fields: ModerationPayloadFields, privateKey: Uint8Array): Promise<string> {
  return signPayload(moderationSigningPayload(fields), privateKey);
}

async function signPayload(payload: Uint8Array, privateKey: Uint8Array): Promise<string> {
  return encodeSignature(await ed.signAsync(payload, checkedSeed(privateKey)));
}

async function verifyPayload(payload: Uint8Array, signature: string, signerDid: string): Promise<boolean> {
  const signatureBytes = decodeSignature(signature);
  const publicKey = ed25519KeyFromDid(signerDid);
  if ("error" in signatureBytes || "error" in publicKey) return false;
  return verifyEd25519(signatureBytes, payload, publicKey);
}

function equalBytes(left: Uint8Array, right: Uint8Array): boolean {
  return left.length === right.length && left.every((byte, index) => byte === right[index]);
}

function checkedSeed(seed: Uint8Array): Uint8Array {
  if (!(seed instanceof Uint8Array) || seed.length !== SEED_LENGTH) {
    throw new TypeError(`an Ed25519 private key is a ${SEED_LENGTH}-byte seed`);
  }
  return seed;
}

function decodeBase64url(text: string): Uint8Array | undefined {
  try {
    // @scure/base refuses padding and non-zero spare bits, so each byte string has one encoding.
    return base64urlnopad.decode(text);
  } catch {
    return undefined;
  }
}
