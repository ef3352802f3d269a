/**
 * The registry's client SDK: everything a publisher needs to produce the signatures the registry
 * checks. Safe to bundle for browsers (no Node imports); needs WebCrypto for SHA-512.
 *
 * ```ts
 * import { generateKeyPair, signEntry } from "./sdk/index.js"; // this module
 *
 * const key = await generateKeyPair();
 * const entry = { entryDid, entryType, version, publisherDid: key.did, publishedAt, contentHash };
 * const signature = await signEntry(entry, key.privateKey);
 * ```
 *
 * The payload rules and a published test vector are in docs/signatures.md.
 */

export {
  /** Fresh random key pair: `{ privateKey (32-byte seed), publicKey, did }`. */
  generateKeyPair,
  /** The key pair of a 32-byte seed. */
  keyPairFromSeed,
  /** Signs an entry's create payload; returns the `signature` field value. */
  signEntry,
  /** Signs a revocation of a DID as addressed; returns the `signature` of the DELETE body. */
  signRevocation,
  /** Checks an entry signature against the key in `publisherDid`. */
  verifyEntrySignature,
  /** Checks a revocation signature against a signer's `did:key`. */
  verifyRevocationSignature,
  /** `ed25519:<base64url>` from 64 signature bytes. */
  encodeSignature,
  /** The 64 bytes of an `ed25519:<base64url>` signature, or why it is not one. */
  decodeSignature,
  /** base64url text of a private key seed. */
  encodePrivateKey,
  /** A private key seed from its base64url text, or why it is not one. */
  decodePrivateKey,
  /** Unpadded base64url. */
  encodeBase64url,
  type KeyPair,
} from "./signing.js";

export {
  /** RFC 8785 canonical bytes of the create payload: what `signEntry` signs. */
  entrySigningPayload,
  /** RFC 8785 canonical bytes of the revoke payload: what `signRevocation` signs. */
  revocationSigningPayload,
  /** `"registry.entry.v1"`, the create payload's `payloadType`. */
  ENTRY_PAYLOAD_TYPE,
  /** `"registry.revoke.v1"`, the revoke payload's `payloadType`. */
  REVOKE_PAYLOAD_TYPE,
  /** The publisher-set entry fields a signature covers. */
  type EntrySigningFields,
} from "../domain/signing-payload.js";

export {
  /** The Ed25519 public key inside a `did:key`, or why there is none. */
  ed25519KeyFromDid,
  /** The `did:key` of an Ed25519 public key. */
  didFromEd25519Key,
} from "../domain/did-key.js";
