import * as ed from "@noble/ed25519";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { entrySigningPayload, revocationSigningPayload, REVOKE_PAYLOAD_TYPE } from "../../src/domain/signing-payload.js";
import {
  createPublisher,
  startPublishingRegistry,
  type PublishingSetup,
  type TestPublisher,
  type TestRegistry,
} from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient } from "../support/protocol-clients.js";
import { expectClientError } from "./client-error.js";
import { BASE_POINT_SIGNATURE } from "../support/signature-vectors.js";

/**
 * Signatures that must not pass: malformed (wrong length, not base64url, padded, another prefix,
 * non-canonical spare bits or S), and well-formed ones over something else (another entry, another
 * key, JSON that is not the canonical form, the other payload type, publishedAt written in a form
 * other than the one the registry signs over). Every one is invalid_argument naming signature, on
 * every protocol, and nothing is stored or revoked. The controls show what the contract does
 * accept: publishedAt in any RFC 3339 UTC form, signed over its toISOString form.
 */

let setup: PublishingSetup;
let registry: TestRegistry;
let publisher: TestPublisher;
let other: TestPublisher;
let token: string;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  ({ registry, publisher, token } = setup);
  other = await createPublisher();
});

afterAll(async () => {
  await setup?.close();
});

const encode = (bytes: Uint8Array) => `ed25519:${Buffer.from(bytes).toString("base64url")}`;
const signBytes = async (message: Uint8Array, key = publisher.keys.privateKey) => encode(await ed.signAsync(message, key));
const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const utf8 = (text: string) => new TextEncoder().encode(text);
/** The group order L, little-endian, as Ed25519 encodes S. */
const GROUP_ORDER_LE = Buffer.from((2n ** 252n + 27742317777372353535851937790883648493n).toString(16).padStart(64, "0"), "hex").reverse();

/** The entry's signing payload as an object, in the order the registry's canonical form sorts it. */
function payloadObject(entry: Record<string, any>): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(entrySigningPayload(entry as never)));
}

type Entry = Record<string, any>;

interface SignatureCase {
  readonly label: string;
  /** The signature to send with `entry`, a correctly signed entry named for this case. */
  readonly signature: (entry: Entry) => Promise<string> | string;
  /** A text the message must contain besides naming signature. */
  readonly says?: string;
}

const DOES_NOT_VERIFY = "signature does not verify";

const MALFORMED: readonly SignatureCase[] = [
  { label: "an empty signature", signature: () => "" },
  { label: "the prefix alone", signature: () => "ed25519:" },
  { label: "85 characters", signature: (e) => e.signature.slice(0, -1) },
  { label: "87 characters", signature: (e) => `${e.signature}A` },
  { label: "padding (==)", signature: (e) => `${e.signature}==` },
  { label: "a + (standard base64, not base64url)", signature: (e) => `${e.signature.slice(0, 20)}+${e.signature.slice(21)}` },
  { label: "a / (standard base64, not base64url)", signature: (e) => `${e.signature.slice(0, 20)}/${e.signature.slice(21)}` },
  { label: "a space inside", signature: (e) => `${e.signature.slice(0, 40)} ${e.signature.slice(41)}` },
  { label: "a trailing newline", signature: (e) => `${e.signature}\n` },
  { label: "a non-ASCII character", signature: (e) => `${e.signature.slice(0, -1)}é` },
  { label: "hex instead of base64url", signature: (e) => `ed25519:${Buffer.from(e.signature.slice(8), "base64url").toString("hex")}` },
  { label: "no prefix", signature: (e) => e.signature.slice(8) },
  { label: "an upper-case prefix", signature: (e) => `ED25519:${e.signature.slice(8)}` },
  { label: "another algorithm's prefix", signature: (e) => `ed448:${e.signature.slice(8)}` },
  { label: "the prefix twice", signature: (e) => `ed25519:${e.signature}` },
  { label: "a signature of 64 KiB", signature: () => `ed25519:${"A".repeat(64 * 1024)}` },
  {
    label: "non-zero spare bits in the last character (the same 64 bytes)",
    // 86 characters carry 516 bits: the last character's low 4 bits must be zero.
    signature: (e) => `${e.signature.slice(0, -1)}${BASE64URL[BASE64URL.indexOf(e.signature.at(-1)!) + 1]}`,
    says: "canonical",
  },
  {
    label: "S equal to the group order",
    signature: (e) => encode(Buffer.concat([Buffer.from(e.signature.slice(8), "base64url").subarray(0, 32), GROUP_ORDER_LE])),
    says: "canonical",
  },
  // R = 0 (y = 0) is a point of order 4: refused when read, before node:crypto, whose verdict on
  // small-order R changed between Node 22 and 24.
  { label: "all zero bytes", signature: () => encode(new Uint8Array(64)), says: "is a point of small order" },
];

const WRONG_MESSAGE: readonly SignatureCase[] = [
  { label: "R the base point, S = 1 (well-formed, made by no key)", signature: () => BASE_POINT_SIGNATURE, says: DOES_NOT_VERIFY },
  {
    label: "a valid signature of another entry",
    signature: async (e) => (await publisher.entry(`${e.entryDid.split(":")[4]!.split("@")[0]}-other`, "1.0.0")).signature,
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the same entry signed by another key",
    signature: async (e) => signBytes(entrySigningPayload(e as never), other.keys.privateKey),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the payload with its keys unsorted",
    signature: (e) => signBytes(utf8(JSON.stringify(Object.fromEntries(Object.entries(payloadObject(e)).reverse())))),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the canonical payload with whitespace",
    signature: (e) => signBytes(utf8(JSON.stringify(sortedKeys(payloadObject(e)), null, 1))),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the canonical payload with non-ASCII escaped",
    signature: (e) => signBytes(utf8(JSON.stringify(sortedKeys(payloadObject(e))).replace(/é/g, "\\u00e9"))),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the payload without payloadType",
    signature: (e) => signBytes(utf8(JSON.stringify(sortedKeys({ ...payloadObject(e), payloadType: undefined })))),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the revocation payload type (a cross-purpose replay)",
    signature: (e) => signBytes(revocationSigningPayload(e.entryDid, "x")),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the payload with the revocation's payloadType",
    signature: (e) => signBytes(utf8(JSON.stringify(sortedKeys({ ...payloadObject(e), payloadType: REVOKE_PAYLOAD_TYPE })))),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the payload with absent fields left out instead of empty",
    signature: (e) => signBytes(utf8(JSON.stringify(sortedKeys({ ...payloadObject(e), bondAmount: undefined, tags: undefined })))),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the description in another Unicode normalisation",
    signature: (e) => signBytes(entrySigningPayload({ ...e, description: e.description.normalize("NFD") } as never)),
    says: DOES_NOT_VERIFY,
  },
  {
    label: "the tags in another order",
    signature: (e) => signBytes(entrySigningPayload({ ...e, tags: [...e.tags].reverse() } as never)),
    says: DOES_NOT_VERIFY,
  },
];

/** A JSON value with object keys sorted (JCS's order for ASCII keys), undefined members dropped. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, sortedKeys(v)]));
}

/** The time every publishedAt case uses, whole seconds, and its RFC 3339 spellings other than toISOString's. */
const SECOND = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000).toISOString();
const PUBLISHED_AT_FORMS: readonly (readonly [string, string])[] = [
  ["without fractional seconds", SECOND.replace(".000Z", "Z")],
  ["with one fractional digit", SECOND.replace(".000Z", ".0Z")],
  ["with two fractional digits", SECOND.replace(".000Z", ".00Z")],
  ["with a +00:00 offset", SECOND.replace("Z", "+00:00")],
  ["with a -00:00 offset", SECOND.replace("Z", "-00:00")],
  ["in lower case", SECOND.replace("T", "t").replace("Z", "z")],
];

function expectSignatureRefused(result: { code: string; fields: readonly string[]; message: string; httpStatus?: number }, says?: string) {
  expectClientError(result, "invalid_argument");
  expect(result.fields, result.message).toContain("signature");
  if (says !== undefined) expect(result.message).toContain(says);
}

describe.each(PROTOCOLS)("entry signatures over %s", (protocol) => {
  let sequence = 0;
  const fresh = () => `abuse-sig-${protocol}-${sequence++}`;
  const withClient = async <T>(work: (client: ReturnType<typeof registryClient>) => Promise<T>): Promise<T> => {
    const client = registryClient(protocol, registry.url);
    try {
      return await work(client);
    } finally {
      client.close();
    }
  };

  it.each([...MALFORMED, ...WRONG_MESSAGE])("refuses $label", async ({ signature, says }) => {
    const entry = await publisher.entry(fresh(), "1.0.0", { description: "Signée, café" });
    await withClient(async (client) => {
      expectSignatureRefused(await client.create({ ...entry, signature: await signature(entry) }, token), says);
      expect((await client.resolve(entry.entryDid)).code).toBe("not_found");
    });
  });

  it.each(PUBLISHED_AT_FORMS)("refuses publishedAt %s when the signature covers that spelling", async (_label, form) => {
    const entry = await publisher.entry(fresh(), "1.0.0", { publishedAt: form });
    // Signed over the text as sent, not over the toISOString form the contract says is signed.
    const literal = JSON.stringify(sortedKeys({ ...payloadObject(entry), publishedAt: form }));
    await withClient(async (client) => {
      expectSignatureRefused(await client.create({ ...entry, signature: await signBytes(utf8(literal)) }, token), DOES_NOT_VERIFY);
      expect((await client.resolve(entry.entryDid)).code).toBe("not_found");
    });
  });

  it.each(PUBLISHED_AT_FORMS)("accepts publishedAt %s signed over its toISOString form (control)", async (_label, form) => {
    // The SDK signs new Date(publishedAt).toISOString() whatever the spelling, as the registry does.
    const entry = await publisher.entry(fresh(), "1.0.0", { publishedAt: form });
    await withClient(async (client) => {
      const created = await client.create(entry, token);
      expect(created.code, created.message).toBe("ok");
      expect(created.body.publishedAt).toBe(SECOND);
    });
  });

  it("refuses an entry changed after signing, in each signed field", async () => {
    const changes: Record<string, unknown> = {
      description: "changed",
      tags: ["changed"],
      data: { license: "GPL" },
      contentHash: `sha256:${"cd".repeat(32)}`,
      bondAmount: "101 USDC",
      publishedAt: new Date(Date.parse(SECOND) - 1000).toISOString(),
    };
    await withClient(async (client) => {
      for (const [field, value] of Object.entries(changes)) {
        const entry = await publisher.entry(fresh(), "1.0.0");
        const result = await client.create({ ...entry, [field]: value }, token);
        expectSignatureRefused(result, DOES_NOT_VERIFY);
      }
    });
  });
});

describe.each(PROTOCOLS)("revocation signatures over %s", (protocol) => {
  const name = `abuse-sig-revoke-${protocol}`;
  const did = `did:reg:main:skill:${name}@1.0.0`;

  beforeAll(async () => {
    const client = registryClient("rest", registry.url);
    const created = await client.create(await publisher.entry(name, "1.0.0"), token);
    expect(created.code, created.message).toBe("ok");
  });

  afterAll(async () => {
    // No refused revocation revoked anything.
    const client = registryClient(protocol, registry.url);
    expect((await client.resolve(did)).body).toMatchObject({ status: "active" });
    client.close();
  });

  const REASON = "superseded";
  const revokeCases: readonly { label: string; signature: () => Promise<string> | string; says?: string }[] = [
    { label: "an empty signature", signature: () => "" },
    { label: "85 characters", signature: async () => (await publisher.revocation(did, REASON)).signature.slice(0, -1) },
    { label: "padding (==)", signature: async () => `${(await publisher.revocation(did, REASON)).signature}==` },
    { label: "no prefix", signature: async () => (await publisher.revocation(did, REASON)).signature.slice(8) },
    {
      label: "a signature over another reason",
      signature: async () => (await publisher.revocation(did, "another reason")).signature,
      says: DOES_NOT_VERIFY,
    },
    {
      label: "a signature over the DID without its version",
      signature: async () => (await publisher.revocation(did.replace("@1.0.0", ""), REASON)).signature,
      says: DOES_NOT_VERIFY,
    },
    {
      label: "a signature over the DID as percent-encoded",
      signature: async () => (await publisher.revocation(did.replace("@", "%40"), REASON)).signature,
      says: DOES_NOT_VERIFY,
    },
    { label: "a signature by another key", signature: async () => (await other.revocation(did, REASON)).signature, says: DOES_NOT_VERIFY },
    {
      label: "the entry's own create signature (a cross-purpose replay)",
      signature: async () => (await publisher.entry(name, "1.0.0")).signature,
      says: DOES_NOT_VERIFY,
    },
    { label: "all zero bytes (R of small order)", signature: () => encode(new Uint8Array(64)), says: "is a point of small order" },
    {
      label: "a signature over JSON with the keys unsorted",
      signature: () => signBytes(utf8(JSON.stringify({ reason: REASON, entryDid: did, payloadType: REVOKE_PAYLOAD_TYPE }))),
      says: DOES_NOT_VERIFY,
    },
  ];

  it.each(revokeCases)("refuses $label", async ({ signature, says }) => {
    const client = registryClient(protocol, registry.url);
    try {
      expectSignatureRefused(await client.revoke(did, { reason: REASON, signature: await signature() }, token), says);
    } finally {
      client.close();
    }
  });
});
