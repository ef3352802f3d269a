/**
 * Builds and signs registry entries fast enough to pre-sign tens of thousands: node:crypto
 * Ed25519 (OpenSSL) over the same canonical payload the server verifies.
 */
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { didFromEd25519Key } from "../src/domain/did-key.js";
import { ENTRY_PAYLOAD_TYPE_V2, entrySigningPayload, type EntrySigningFields } from "../src/domain/signing-payload.js";

export interface BenchPublisher {
  readonly did: string;
  readonly privateKey: KeyObject;
}

/** A signed entry as POSTed: every signed field present, plus its signature. */
export type EntryJson = Required<EntrySigningFields> & { readonly signature: string };

export const ENTRY_TYPE = "skill";
export const NETWORK_PREFIX = "did:reg:main";

export function createPublisher(): BenchPublisher {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x as string;
  return { did: didFromEd25519Key(Buffer.from(x, "base64url")), privateKey };
}

export function baseDid(name: string): string {
  return `${NETWORK_PREFIX}:${ENTRY_TYPE}:${name}`;
}

/** A signed entry shaped like a real publish: a description, tags, a small data object. */
export function signedEntry(publisher: BenchPublisher, name: string, version: string, publishedAt: string): EntryJson {
  const unsigned = {
    entryDid: `${baseDid(name)}@${version}`,
    entryType: ENTRY_TYPE,
    version,
    publisherDid: publisher.did,
    publishedAt,
    description: `The ${name} skill: searches the web and summarises what it finds.`,
    tags: ["search", "web", "bench"],
    data: { runtime: { node: ">=20" } },
    contentHash: `sha256:${"ab".repeat(32)}`,
    bondAmount: "100 USDC",
    homepage: `https://example.com/skills/${name}`,
    repository: `https://git.example.com/skills/${name}`,
    license: "MIT",
    payloadType: ENTRY_PAYLOAD_TYPE_V2,
  };
  const signature = sign(null, entrySigningPayload(unsigned), publisher.privateKey);
  return { ...unsigned, signature: `ed25519:${signature.toString("base64url")}` };
}

/** Now, to the second: what a publisher would put in publishedAt. */
export function nowToTheSecond(): string {
  return new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
}
