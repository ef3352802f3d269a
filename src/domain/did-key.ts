import { base58 } from "@scure/base";

/** The multicodec prefix of an Ed25519 public key (0xed, as an unsigned varint). */
const ED25519_MULTICODEC = [0xed, 0x01] as const;

/**
 * Extracts the Ed25519 public key from a `did:key`. Other DID methods are refused with a reason
 * naming the method, so a later resolver (did:web, did:plc) can be plugged in where this is called.
 */
export function ed25519KeyFromDid(did: string): Uint8Array | { error: string } {
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
  if (
    bytes.length !== 34 ||
    bytes[0] !== ED25519_MULTICODEC[0] ||
    bytes[1] !== ED25519_MULTICODEC[1]
  ) {
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
