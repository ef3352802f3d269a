import { createClientOverTransport, type RegistryClient, type RegistryClientBaseOptions } from "./registry-client.js";
import { createWebTransport, type WebTransportKind } from "./web-transport.js";

/**
 * The registry's client SDK, browser entry: a typed client (`createRegistryClient`) and the signing
 * a publisher needs. Safe to bundle for browsers (no Node imports anywhere in its imports); needs
 * fetch and WebCrypto (for SHA-512). Node users import the Node entry (node.ts), which adds gRPC.
 *
 * ```ts
 * const client = createRegistryClient({ baseUrl: "https://registry.example.com", auth: { rootToken } });
 * const key = await generateKeyPair();
 * const stored = await client.publish({ entryDid, entryType, version, publisherDid: key.did, publishedAt, contentHash }, { key });
 * for await (const entry of client.discover({ entryType: "skill" })) console.log(entry.entryDid);
 * ```
 *
 * docs/sdk.md is the guide; the payload rules and a published test vector are in docs/signatures.md.
 */

/** Options of a browser client. */
export interface RegistryClientOptions extends RegistryClientBaseOptions {
  /** "connect" (JSON) by default; "connect-binary" or "grpc-web" send protobuf. */
  readonly transport?: WebTransportKind;
  /** The fetch to use; the global one by default. */
  readonly fetch?: typeof globalThis.fetch;
}

/** A client of the registry at `options.baseUrl`, over fetch. */
export function createRegistryClient(options: RegistryClientOptions): RegistryClient {
  return createClientOverTransport(createWebTransport(options.transport ?? "connect", options), options);
}

export type {
  RegistryClient,
  RegistryClientBaseOptions,
  EntryInput,
  SigningKey,
  CallOptions,
  WriteOptions,
  LifecycleOptions,
  ModerationOptions,
  DiscoverRequest,
  DiscoverConditionInput,
  DiscoverPage,
  QueryOptions,
  QueryPage,
} from "./registry-client.js";
export { WEB_TRANSPORT_KINDS, type WebTransportKind } from "./web-transport.js";
export {
  /** The log's key from its verifier key text, for pinning. */
  parseLogKey,
  /** Opens a checkpoint note with the pinned log key. */
  verifyCheckpoint,
  /** Checks an entry version's record, inclusion proof, checkpoint and signatures end to end. */
  verifyEntryProof,
  /** Checks that a newer checkpoint extends an older one. */
  verifyCheckpointsConsistent,
  LogVerificationError,
  type EntryProof,
  type LogRecord,
  type VerifiedCheckpoint,
} from "./log-verifier.js";
export {
  /** Fetches every page of a name's or a version's history and checks each record against one checkpoint. */
  fetchVerifiedHistory,
  type HistoryPageAnswer,
  type VerifiedHistory,
  type VerifiedHistoryRecord,
} from "./history-verifier.js";
export {
  /** The first member where the entry a registry serves differs from its verified history. */
  servedEntryMismatch,
  type ServedMismatch,
} from "./served-entry.js";
export { RegistryClientError, toRegistryClientError, type FieldViolation, type RegistryErrorCode } from "./client-error.js";
export type { RegistryAuth, RootTokenAuth } from "./access-tokens.js";
/** The generated message types the client returns. */
export type { Entry, EntryVersion } from "../../gen/registry/v1/entry_pb.js";

export {
  /** Fresh random key pair: `{ privateKey (32-byte seed), publicKey, did }`. */
  generateKeyPair,
  /** The key pair of a 32-byte seed. */
  keyPairFromSeed,
  /** Signs an entry's create payload; returns the `signature` field value. */
  signEntry,
  /** Signs a revocation of a DID as addressed; returns the `signature` of the DELETE body. */
  signRevocation,
  /** Signs a lifecycle request (registry.lifecycle.v1); returns its `signature`. */
  signLifecycle,
  /** Signs a moderation request (registry.moderation.v1); returns its `signature`. */
  signModeration,
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
  /** RFC 8785 canonical bytes of the lifecycle payload: what `signLifecycle` signs. */
  lifecycleSigningPayload,
  /** RFC 8785 canonical bytes of the moderation payload: what `signModeration` signs. */
  moderationSigningPayload,
  LIFECYCLE_ACTIONS,
  MODERATION_ACTIONS,
  MODERATION_POLICIES,
  type LifecycleAction,
  type ModerationAction,
  type ModerationPolicy,
  type LifecyclePayloadFields,
  type ModerationPayloadFields,
} from "../domain/action-payloads.js";

export {
  /** RFC 8785 canonical bytes of the create payload: what `signEntry` signs. */
  entrySigningPayload,
  /** RFC 8785 canonical bytes of the revoke payload: what `signRevocation` signs. */
  revocationSigningPayload,
  /** `"registry.entry.v1"`: the create payload of every field, what a create that names no `payloadType` is read as. */
  ENTRY_PAYLOAD_TYPE,
  /** `"registry.entry.v2"`: the create payload of the fields that are set, what `publish` signs unless told otherwise. */
  ENTRY_PAYLOAD_TYPE_V2,
  /** Thrown when a v1 entry sets a field only v2 signs. */
  UnsignedFieldError,
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
