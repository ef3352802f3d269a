import type { EntrySigningFields, LifecyclePayloadFields, ModerationPayloadFields } from "../../src/sdk/index.js";

/**
 * The published test vector of docs/signatures.md ("Test vector"), written out here so that a
 * change to the docs or to the signing code is caught by the tests that use it.
 */
export const SEED_HEX = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
export const SEED_BASE64URL = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
export const PUBLIC_KEY_HEX = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
export const DID = "did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw";

export const ENTRY = {
  entryDid: "did:reg:main:skill:pdf-summarizer@1.2.0",
  entryType: "skill",
  version: "1.2.0",
  publisherDid: DID,
  publishedAt: "2026-11-21T10:00:00Z",
  description: "Summarises PDF files — résumé included",
  tags: ["pdf", "summarization"],
  data: {
    runtime: "node",
    license: "Apache-2.0",
    limits: { maxPages: 200, timeoutSeconds: 30 },
  },
  contentHash: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  bondAmount: "100 USDC",
} as const satisfies EntrySigningFields;
export const ENTRY_SIGNATURE = "ed25519:dDwWKhjIjXnrCPSRfrfarI5tlg5m5Mhq_gurhhSWm9nTYwxSzLgqwHpF1ZwUa0iMiGZ3iBjZ7xQknXpjhgvIAw";

/** The same entry as `registry.entry.v2` signs it: v2's fields set, no bond, so the payload leaves bondAmount out. */
export const ENTRY_V2 = {
  payloadType: "registry.entry.v2",
  entryDid: "did:reg:main:skill:pdf-summarizer@1.2.0",
  entryType: "skill",
  version: "1.2.0",
  publisherDid: DID,
  publishedAt: "2026-11-21T10:00:00Z",
  description: "Summarises PDF files — résumé included",
  tags: ["pdf", "summarization"],
  data: { runtime: "node", limits: { maxPages: 200, timeoutSeconds: 30 } },
  contentHash: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  homepage: "https://example.com/pdf-summarizer",
  repository: "https://git.example.com/pdf-summarizer",
  license: "Apache-2.0 OR MIT",
} as const satisfies EntrySigningFields;
export const ENTRY_V2_SIGNATURE = "ed25519:R8JGPgtPjczlJw-XFTLplqFbqxQUYSrrbr3iOIKwB-kaU-5CFXqwGTXjBi_jQ94Wz1WreEqu51KU586kkguSDg";

/** docs/signatures.md, "Deprecation with a replacement": a lifecycle request by the key above. */
export const LIFECYCLE = {
  subject: "did:reg:main:skill:pdf-summarizer@1.2.0",
  action: "deprecate",
  reason: "wrong page count on scanned PDFs: use 1.2.1",
  replacement: "did:reg:main:skill:pdf-summarizer@1.2.1",
  by: DID,
  issuedAt: "2026-11-22T09:15:00.000Z",
} as const satisfies LifecyclePayloadFields;
export const LIFECYCLE_SIGNATURE = "ed25519:v6yDYQH6HOToi4wZBiDu8W3nPiOe0YxV7wqjx3wQRAVUH2wzUmfjq_P7ZHh2IkHThlDItSdSVxvZHZh_U5y8BQ";

/** docs/signatures.md, "Moderation: removal": the same key as a moderator's. */
export const MODERATION = {
  subject: "did:reg:main:skill:pdf-summarizer@1.2.0",
  action: "remove",
  policy: "malware",
  note: "sends the PDFs it reads to a third-party host",
  by: DID,
  issuedAt: "2026-11-23T14:30:00.000Z",
} as const satisfies ModerationPayloadFields;
export const MODERATION_SIGNATURE = "ed25519:icQTMq8BChaSpXiNj8XsQFfcVMnnyfGr4r06PhAikjXimF58305zKRTCIpDHw5GbcKFL6-V45nnljok1RhpnAg";
