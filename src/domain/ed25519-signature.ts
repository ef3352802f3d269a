import { createPublicKey, verify, type KeyObject } from "node:crypto";
import {
  ed25519PublicKeyFault,
  hasCanonicalScalar,
  hasSmallOrderNonce,
  NON_CANONICAL_SCALAR_ERROR,
  SMALL_ORDER_NONCE_ERROR,
} from "./ed25519-strictness.js";

const SIGNATURE = /^ed25519:([A-Za-z0-9_-]{86})$/;

/**
 * Decodes `ed25519:<base64url>` (no padding) into the 64 signature bytes, or returns why not. A
 * signature whose S is not below the group order, or whose R is of small order, is refused here,
 * before any verification, so the refusal says why instead of "does not verify".
 */
export function parseSignature(text: string): Uint8Array | { error: string } {
  if (text.length === 0) return { error: "is required" };
  const match = SIGNATURE.exec(text);
  if (match === null) {
    return { error: "must be ed25519: followed by the unpadded base64url of 64 bytes" };
  }
  const bytes = Buffer.from(match[1] ?? "", "base64url");
  // 86 base64url characters carry 64 bytes plus 4 spare bits, which must be zero in the encoding.
  if (bytes.length !== 64 || bytes.toString("base64url") !== match[1]) {
    return { error: "is not a canonical base64url encoding of 64 bytes" };
  }
  if (!hasCanonicalScalar(bytes)) return { error: NON_CANONICAL_SCALAR_ERROR };
  if (hasSmallOrderNonce(bytes)) return { error: SMALL_ORDER_NONCE_ERROR };
  return bytes;
}

/** Formats signature bytes the way the registry expects them. */
export function formatSignature(bytes: Uint8Array): string {
  return `ed25519:${Buffer.from(bytes).toString("base64url")}`;
}

/**
 * Verifies Ed25519 signatures with node:crypto, far faster than pure-JS verification, on libuv's
 * thread pool: a verification is a sizeable share of a publish's CPU, and off the event loop it
 * runs on another core while the loop serves other requests (docs/performance.md#creates).
 * Imported keys are cached because building a KeyObject costs about as much as a verification,
 * and publishers sign many entries with one key.
 *
 * It applies the registry's whole rule (docs/signatures.md), not only OpenSSL's: OpenSSL accepts
 * small-order and non-canonically encoded keys, and node:crypto's verdict on a small-order R
 * depends on the Node version, so those, and an S of L or more, verify as false here whatever
 * node:crypto would say. Callers that parsed the key with `ed25519KeyFromDid` and the
 * signature with `parseSignature` have refused them already, with reasons.
 */
export function createSignatureVerifier(cacheSize = 10_000): {
  verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean>;
} {
  const keys = new Map<string, KeyObject>();
  function keyFor(publicKey: Uint8Array): KeyObject | undefined {
    const x = Buffer.from(publicKey).toString("base64url");
    let key = keys.get(x);
    if (key === undefined) {
      if (ed25519PublicKeyFault(publicKey) !== undefined) return undefined;
      key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
      if (keys.size >= cacheSize) keys.delete(keys.keys().next().value as string);
      keys.set(x, key);
    }
    return key;
  }
  return {
    verify(publicKey, message, signature) {
      if (signature.length !== 64 || !hasCanonicalScalar(signature) || hasSmallOrderNonce(signature)) return Promise.resolve(false);
      const key = keyFor(publicKey);
      if (key === undefined) return Promise.resolve(false);
      return new Promise((resolve, reject) => {
        verify(null, message, key, signature, (error, valid) => (error === null ? resolve(valid) : reject(error)));
      });
    },
  };
}
