import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient, type CallResult, type Protocol } from "../support/protocol-clients.js";

/**
 * Every rule of CONTRACT section 2, exercised through the running server on every protocol.
 * Each rejected create carries a valid token (authentication is checked first) and, except for
 * the signature rules, a signature over its own bytes, so the rule under test is the only fault.
 */

let db: TestDatabase;
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  publisher = await createPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill", "registry.publish.agent"]);
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

type Entry = Record<string, any>;

/** A whole RFC 3339 second near the server's clock, as toISOString writes it. */
function nowSeconds(offsetMs = 0): Date {
  return new Date(Math.floor((Date.now() + offsetMs) / 1000) * 1000);
}

function without(entry: Entry, ...keys: string[]): Entry {
  const copy = { ...entry };
  for (const key of keys) delete copy[key];
  return copy;
}

/** Nested objects `levels` deep: depth 1 is `{ leaf: 1 }`. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let level = 1; level < levels; level++) value = { next: value };
  return value;
}

const EMOJI = "\u{1F600}"; // one code point, two UTF-16 units, four UTF-8 bytes
const did = (name: string, version: string, type = "skill") => `did:reg:main:${type}:${name}@${version}`;

interface RejectCase {
  readonly rule: string;
  /** The field name the BadRequest detail (and the message) must carry. */
  readonly field: string;
  /** A further text the message must contain. */
  readonly says?: string;
  /** Builds the request for an entry named `name` (unique per case and protocol). */
  readonly build: (p: TestPublisher, name: string) => Promise<Entry>;
}

const sign = (p: TestPublisher, name: string, version: string, fields: Entry = {}) => p.entry(name, version, fields);
/** Signs a valid entry, then replaces fields without re-signing (for fields that cannot be signed as sent). */
const signThenSet = async (p: TestPublisher, name: string, fields: Entry) => ({ ...(await sign(p, name, "1.0.0")), ...fields });

const REJECTED: readonly RejectCase[] = [
  // entryDid
  { rule: "entryDid not a DID", field: "entryDid", build: (p, n) => sign(p, n, "1.0.0", { entryDid: `not-a-did:${n}` }) },
  { rule: "entryDid missing", field: "entryDid", says: "is required", build: (p, n) => sign(p, n, "1.0.0", { entryDid: "" }) },
  {
    rule: "entryDid without @version",
    field: "entryDid",
    says: "@<version>",
    build: (p, n) => sign(p, n, "1.0.0", { entryDid: `did:reg:main:skill:${n}` }),
  },
  {
    rule: "entryDid entryType part differs from entryType",
    field: "entryDid",
    says: "entryType",
    build: (p, n) => sign(p, n, "1.0.0", { entryDid: did(n, "1.0.0", "agent") }),
  },
  {
    rule: "entryDid version part differs from version",
    field: "entryDid",
    says: "must equal version",
    build: (p, n) => sign(p, n, "1.0.0", { entryDid: did(n, "1.0.1") }),
  },
  {
    rule: "entryDid longer than 512 characters",
    field: "entryDid",
    says: "512",
    // name and every part valid; only the whole length (513) is over.
    build: (p, n) => {
      const tail = `:skill:${n}@1.0.0`;
      const network = "n".repeat(513 - "did:reg:".length - tail.length);
      return sign(p, n, "1.0.0", { entryDid: `did:reg:${network}${tail}` });
    },
  },
  {
    rule: "entryDid name with a character outside [a-z0-9._-]",
    field: "entryDid",
    says: "name",
    build: (p, n) => sign(p, n, "1.0.0", { entryDid: did(`${n}+x`, "1.0.0") }),
  },
  {
    rule: "entryDid name with an uppercase letter",
    field: "entryDid",
    says: "name",
    build: (p, n) => sign(p, n, "1.0.0", { entryDid: did(`${n}X`, "1.0.0") }),
  },
  {
    rule: "entryDid name starting with a dash",
    field: "entryDid",
    says: "name",
    build: (p, n) => sign(p, n, "1.0.0", { entryDid: did(`-${n}`, "1.0.0") }),
  },
  {
    rule: "entryDid name of 129 characters",
    field: "entryDid",
    says: "128",
    build: (p, n) => sign(p, n, "1.0.0", { entryDid: did(n + "a".repeat(129 - n.length), "1.0.0") }),
  },
  {
    rule: "entryDid method with an uppercase letter",
    field: "entryDid",
    build: (p, n) => sign(p, n, "1.0.0", { entryDid: `did:REG:main:skill:${n}@1.0.0` }),
  },
  // entryType
  {
    rule: "entryType missing",
    field: "entryType",
    says: "is required",
    build: async (p, n) => without(await sign(p, n, "1.0.0", { entryType: "", entryDid: did(n, "1.0.0") }), "entryType"),
  },
  {
    rule: "entryType not configured",
    field: "entryType",
    says: "skill, agent",
    build: (p, n) => sign(p, n, "1.0.0", { entryType: "plugin" }),
  },
  // version
  { rule: "version not SemVer (1.0)", field: "version", says: "SemVer", build: (p, n) => sign(p, n, "1.0") },
  { rule: "version with build metadata", field: "version", says: "build metadata", build: (p, n) => sign(p, n, "1.0.0+build.5") },
  { rule: 'version with a "v" prefix', field: "version", says: "SemVer", build: (p, n) => sign(p, n, "v1.0.0") },
  { rule: 'version with an "=" prefix', field: "version", says: "SemVer", build: (p, n) => sign(p, n, "=1.0.0") },
  { rule: "version of 65 characters", field: "version", says: "64", build: (p, n) => sign(p, n, `1.0.0-${"a".repeat(59)}`) },
  { rule: "version with a leading zero", field: "version", says: "SemVer", build: (p, n) => sign(p, n, "01.0.0") },
  { rule: "version with a leading zero in a prerelease number", field: "version", build: (p, n) => sign(p, n, "1.0.0-rc.01") },
  {
    rule: "version missing",
    field: "version",
    says: "is required",
    // Signed with version "" (how the registry reads an absent field); the DID keeps its version.
    build: async (p, n) => without(await sign(p, n, "", { entryDid: did(n, "1.0.0") }), "version"),
  },
  // publisherDid
  {
    rule: "publisherDid missing",
    field: "publisherDid",
    says: "is required",
    build: async (p, n) => without(await sign(p, n, "1.0.0", { publisherDid: "" }), "publisherDid"),
  },
  {
    rule: "publisherDid with did:web",
    field: "publisherDid",
    says: "unsupported DID method",
    build: (p, n) => sign(p, n, "1.0.0", { publisherDid: "did:web:example.com" }),
  },
  {
    rule: "publisherDid did:key that is not base58btc",
    field: "publisherDid",
    build: (p, n) => sign(p, n, "1.0.0", { publisherDid: "did:key:z6Mk0OIl" }),
  },
  {
    rule: "publisherDid did:key that is too short",
    field: "publisherDid",
    build: (p, n) => sign(p, n, "1.0.0", { publisherDid: "did:key:z6Mk" }),
  },
  {
    rule: "publisherDid did:key of a secp256k1 key",
    field: "publisherDid",
    says: "Ed25519",
    build: (p, n) => sign(p, n, "1.0.0", { publisherDid: "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme" }),
  },
  {
    rule: "publisherDid that is not a DID",
    field: "publisherDid",
    build: (p, n) => sign(p, n, "1.0.0", { publisherDid: "z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK" }),
  },
  // publishedAt
  {
    // The payload needs a time to sign, so this one is signed with one and sent without it.
    rule: "publishedAt missing",
    field: "publishedAt",
    says: "is required",
    build: async (p, n) => without(await sign(p, n, "1.0.0"), "publishedAt"),
  },
  {
    rule: "publishedAt with a +02:00 offset",
    field: "publishedAt",
    says: "UTC",
    build: (p, n) => {
      const at = nowSeconds(2 * 3600_000)
        .toISOString()
        .replace(".000Z", "+02:00");
      return sign(p, n, "1.0.0", { publishedAt: at });
    },
  },
  {
    rule: "publishedAt with microseconds",
    field: "publishedAt",
    says: "millisecond",
    build: (p, n) => sign(p, n, "1.0.0", { publishedAt: nowSeconds().toISOString().replace(".000Z", ".123456Z") }),
  },
  {
    rule: "publishedAt more than 5 minutes ahead",
    field: "publishedAt",
    says: "5 minutes",
    build: (p, n) => sign(p, n, "1.0.0", { publishedAt: nowSeconds(6 * 60_000).toISOString() }),
  },
  {
    rule: "publishedAt on February 30th",
    field: "publishedAt",
    says: "calendar",
    build: (p, n) => sign(p, n, "1.0.0", { publishedAt: "2026-02-30T10:00:00.000Z" }),
  },
  {
    rule: "publishedAt as a date only",
    field: "publishedAt",
    build: (p, n) => sign(p, n, "1.0.0", { publishedAt: "2026-01-02" }),
  },
  // description
  {
    rule: "description of 2001 ASCII characters",
    field: "description",
    says: "2000",
    build: (p, n) => sign(p, n, "1.0.0", { description: "d".repeat(2001) }),
  },
  {
    rule: "description of 2001 emoji",
    field: "description",
    says: "2000",
    build: (p, n) => sign(p, n, "1.0.0", { description: EMOJI.repeat(2001) }),
  },
  // tags
  {
    rule: "33 tags",
    field: "tags",
    says: "32",
    build: (p, n) => sign(p, n, "1.0.0", { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }),
  },
  { rule: "a duplicate tag", field: "tags[2]", says: "duplicates", build: (p, n) => sign(p, n, "1.0.0", { tags: ["a", "b", "a"] }) },
  { rule: "an uppercase tag", field: "tags[1]", build: (p, n) => sign(p, n, "1.0.0", { tags: ["ok", "Search"] }) },
  { rule: "a tag of 65 characters", field: "tags[0]", build: (p, n) => sign(p, n, "1.0.0", { tags: ["t".repeat(65)] }) },
  { rule: "an empty tag", field: "tags[0]", build: (p, n) => sign(p, n, "1.0.0", { tags: [""] }) },
  { rule: "a tag starting with a dot", field: "tags[0]", build: (p, n) => sign(p, n, "1.0.0", { tags: [".hidden"] }) },
  // data
  {
    rule: "data over 32 KiB as JSON",
    field: "data",
    says: "32768",
    // {"d":"…"} is 8 bytes plus the string: 32769 bytes in all.
    build: (p, n) => sign(p, n, "1.0.0", { data: { d: "x".repeat(32 * 1024 - 7) } }),
  },
  { rule: "data nested 17 deep", field: "data", says: "16", build: (p, n) => sign(p, n, "1.0.0", { data: nested(17) }) },
  // contentHash
  {
    rule: "contentHash in uppercase hex",
    field: "contentHash",
    says: "lowercase",
    build: (p, n) => sign(p, n, "1.0.0", { contentHash: `sha256:${"AB".repeat(32)}` }),
  },
  { rule: "contentHash too short", field: "contentHash", build: (p, n) => sign(p, n, "1.0.0", { contentHash: "sha256:abcd" }) },
  {
    rule: "contentHash of another algorithm",
    field: "contentHash",
    build: (p, n) => sign(p, n, "1.0.0", { contentHash: `sha512:${"ab".repeat(32)}` }),
  },
  {
    rule: "contentHash missing",
    field: "contentHash",
    says: "is required",
    build: async (p, n) => without(await sign(p, n, "1.0.0", { contentHash: "" }), "contentHash"),
  },
  // bondAmount
  { rule: 'bondAmount without a unit ("100")', field: "bondAmount", build: (p, n) => sign(p, n, "1.0.0", { bondAmount: "100" }) },
  {
    rule: 'bondAmount with a lowercase unit ("1.0 usdc")',
    field: "bondAmount",
    build: (p, n) => sign(p, n, "1.0.0", { bondAmount: "1.0 usdc" }),
  },
  {
    rule: "bondAmount with 31 integer digits",
    field: "bondAmount",
    build: (p, n) => sign(p, n, "1.0.0", { bondAmount: `1${"0".repeat(30)} USDC` }),
  },
  {
    rule: "bondAmount with 19 fraction digits",
    field: "bondAmount",
    build: (p, n) => sign(p, n, "1.0.0", { bondAmount: `0.${"1".repeat(19)} USDC` }),
  },
  { rule: "bondAmount negative", field: "bondAmount", build: (p, n) => sign(p, n, "1.0.0", { bondAmount: "-1 USDC" }) },
  { rule: "bondAmount with a one-letter unit", field: "bondAmount", build: (p, n) => sign(p, n, "1.0.0", { bondAmount: "1 U" }) },
  {
    rule: "bondAmount with a 17-character unit",
    field: "bondAmount",
    build: (p, n) => sign(p, n, "1.0.0", { bondAmount: `1 U${"S".repeat(16)}` }),
  },
  {
    rule: "bondAmount with a unit starting with a digit",
    field: "bondAmount",
    build: (p, n) => sign(p, n, "1.0.0", { bondAmount: "1 1INCH" }),
  },
  // signature (set after signing)
  {
    rule: "signature missing",
    field: "signature",
    says: "is required",
    build: async (p, n) => without(await sign(p, n, "1.0.0"), "signature"),
  },
  {
    rule: "signature not ed25519:",
    field: "signature",
    says: "ed25519:",
    build: async (p, n) => {
      const entry = await sign(p, n, "1.0.0");
      return { ...entry, signature: entry.signature.replace("ed25519:", "rsa:") };
    },
  },
  {
    rule: "signature of 63 bytes",
    field: "signature",
    build: (p, n) => signThenSet(p, n, { signature: `ed25519:${Buffer.alloc(63, 7).toString("base64url")}` }),
  },
  {
    rule: "signature of 65 bytes",
    field: "signature",
    build: (p, n) => signThenSet(p, n, { signature: `ed25519:${Buffer.alloc(65, 7).toString("base64url")}` }),
  },
  {
    rule: "signature with base64 padding",
    field: "signature",
    build: async (p, n) => {
      const entry = await sign(p, n, "1.0.0");
      return { ...entry, signature: `${entry.signature}==` };
    },
  },
  // payloadType and the fields only v2 signs
  {
    rule: "payloadType unknown",
    field: "payloadType",
    says: "registry.entry.v2",
    build: (p, n) => signThenSet(p, n, { payloadType: "registry.entry.v3" }),
  },
  ...(["homepage", "repository", "license"] as const).map((field) => ({
    rule: `${field} on a v1 entry`,
    field,
    says: "registry.entry.v2",
    build: (p: TestPublisher, n: string) => signThenSet(p, n, { [field]: field === "license" ? "MIT" : "https://example.com" }),
  })),
  ...(
    [
      ["homepage", "http://example.com", "https://"],
      ["homepage", "example.com/x", "https://"],
      ["homepage", "https://user:secret@example.com", "password"],
      ["homepage", "https://example.com/a b", "spaces"],
      ["homepage", `https://example.com/${"x".repeat(2_049 - 20)}`, "2048"],
      ["repository", "ftp://example.com/repo", "https://"],
      ["repository", "https://", "https://"],
      ["license", "mit", "SPDX"],
      ["license", "MIT OR", "SPDX"],
      ["license", "Apache 2", "SPDX"],
      ["license", `LicenseRef-${"x".repeat(246)}`, "256"],
    ] as const
  ).map(([field, value, says]) => ({
    rule: `${field} ${JSON.stringify(value.length > 40 ? `${value.slice(0, 30)}… (${value.length} characters)` : value)}`,
    field,
    says,
    build: (p: TestPublisher, n: string) => sign(p, n, "1.0.0", { payloadType: "registry.entry.v2", [field]: value }),
  })),
  // fields the registry sets
  { rule: "sequence sent", field: "sequence", says: "set by the registry", build: (p, n) => sign(p, n, "1.0.0", { sequence: "5" }) },
  { rule: "status sent", field: "status", says: "set by the registry", build: (p, n) => sign(p, n, "1.0.0", { status: "active" }) },
  { rule: "isLatest sent", field: "isLatest", says: "set by the registry", build: (p, n) => sign(p, n, "1.0.0", { isLatest: true }) },
  {
    rule: "revocationReason sent",
    field: "revocationReason",
    says: "set by the registry",
    build: (p, n) => sign(p, n, "1.0.0", { revocationReason: "none" }),
  },
];

interface AcceptCase {
  readonly rule: string;
  readonly build: (p: TestPublisher, name: string) => Promise<Entry>;
  /** What the stored entry must show. */
  readonly expected: (sent: Entry) => Entry;
}

const echoes =
  (...keys: string[]) =>
  (sent: Entry) =>
    Object.fromEntries(keys.map((k) => [k, sent[k]]));

const ACCEPTED: readonly AcceptCase[] = [
  {
    rule: "a description of 2000 emoji (code points, not UTF-16 units)",
    build: (p, n) => sign(p, n, "1.0.0", { description: EMOJI.repeat(2000) }),
    expected: echoes("description"),
  },
  { rule: "data nested 16 deep", build: (p, n) => sign(p, n, "1.0.0", { data: nested(16) }), expected: echoes("data") },
  {
    rule: "data of exactly 32 KiB as JSON",
    build: (p, n) => sign(p, n, "1.0.0", { data: { d: "x".repeat(32 * 1024 - 8) } }),
    expected: echoes("data"),
  },
  { rule: 'bondAmount "0.5 ETH"', build: (p, n) => sign(p, n, "1.0.0", { bondAmount: "0.5 ETH" }), expected: echoes("bondAmount") },
  { rule: 'bondAmount "100 USDC"', build: (p, n) => sign(p, n, "1.0.0", { bondAmount: "100 USDC" }), expected: echoes("bondAmount") },
  {
    rule: "bondAmount with 30 integer and 18 fraction digits",
    build: (p, n) => sign(p, n, "1.0.0", { bondAmount: `9${"9".repeat(29)}.${"1".repeat(18)} WEI2` }),
    expected: echoes("bondAmount"),
  },
  {
    rule: "no bondAmount, description, tags or data",
    build: async (p, n) =>
      without(
        await sign(p, n, "1.0.0", { bondAmount: "", description: "", tags: [], data: {} }),
        "bondAmount",
        "description",
        "tags",
        "data",
      ),
    expected: () => ({ bondAmount: "", description: "", tags: [], data: {} }),
  },
  {
    rule: "a v2 entry with homepage, repository and license",
    build: (p, n) =>
      sign(p, n, "1.0.0", {
        payloadType: "registry.entry.v2",
        homepage: `https://example.com/${"h".repeat(2_048 - 20)}`,
        repository: "https://git.example.com/owner/repo?ref=main#readme",
        license: `(Apache-2.0 WITH LLVM-exception OR MIT) AND LicenseRef-${"x".repeat(200)}`,
      }),
    expected: echoes("payloadType", "homepage", "repository", "license"),
  },
  {
    rule: "a v2 entry with every optional field empty, signed over the required fields only",
    build: (p, n) =>
      sign(p, n, "1.0.0", { payloadType: "registry.entry.v2", description: "", tags: [], data: {}, bondAmount: "", homepage: "" }),
    expected: () => ({ payloadType: "registry.entry.v2", description: "", tags: [], data: {}, bondAmount: "", homepage: "", license: "" }),
  },
  {
    rule: "an entry that names no payloadType, stored as v1",
    build: (p, n) => sign(p, n, "1.0.0"),
    expected: () => ({ payloadType: "registry.entry.v1", homepage: "", repository: "", license: "" }),
  },
  {
    rule: "32 tags, one of 64 characters",
    build: (p, n) => sign(p, n, "1.0.0", { tags: [...Array.from({ length: 31 }, (_, i) => `t${i}`), "t".repeat(64)] }),
    expected: echoes("tags"),
  },
  {
    rule: "an entryDid of exactly 512 characters",
    build: (p, n) => {
      const tail = `:skill:${n}@1.0.0`;
      const network = "n".repeat(512 - "did:reg:".length - tail.length);
      return sign(p, n, "1.0.0", { entryDid: `did:reg:${network}${tail}` });
    },
    expected: echoes("entryDid"),
  },
  {
    rule: "a name of 128 characters",
    build: (p, n) => sign(p, n + "a".repeat(128 - n.length), "1.0.0"),
    expected: echoes("entryDid"),
  },
  {
    rule: "a name using each of . _ -",
    build: (p, n) => sign(p, `${n}.a_b-c`, "1.0.0"),
    expected: echoes("entryDid"),
  },
  { rule: "a prerelease version", build: (p, n) => sign(p, n, "1.0.0-rc.1"), expected: echoes("entryDid", "version") },
  {
    rule: "an agent entry",
    build: (p, n) => sign(p, n, "0.0.1", { entryType: "agent" }),
    expected: echoes("entryDid", "entryType"),
  },
  {
    rule: "a publishedAt up to 5 minutes ahead",
    build: (p, n) => sign(p, n, "1.0.0", { publishedAt: nowSeconds(4 * 60_000).toISOString() }),
    expected: echoes("publishedAt"),
  },
];

/**
 * The message as a person reads it. On gRPC, Connect's server percent-encodes grpc-message with
 * encodeURIComponent and @grpc/grpc-js decodes it with decodeURI, which leaves %3A, %40 and %2C
 * encoded ("entryDid%3A must end with %40<version>"); the text itself is right.
 */
function readable(result: CallResult): string {
  try {
    return decodeURIComponent(result.message);
  } catch {
    return result.message;
  }
}

function expectRejected(result: CallResult, field: string, says?: string): void {
  expect(result.code).toBe("invalid_argument");
  expect(result.fields).toContain(field);
  expect(readable(result)).toContain(field);
  if (says !== undefined) expect(readable(result)).toContain(says);
  if (result.httpStatus !== undefined) expect(result.httpStatus).toBe(400);
}

/** Short unique entry names: rej-<case>-<protocol>. */
const PROTOCOL_TAG: Record<Protocol, string> = { grpc: "g", connect: "c", "grpc-web": "w", rest: "r" };

describe.each(PROTOCOLS)("entry rules over %s", (protocol) => {
  const client = () => registryClient(protocol, registry.url);
  const tag = PROTOCOL_TAG[protocol];

  it.each(REJECTED.map((c, index) => ({ ...c, index })))("rejects $rule", async ({ field, says, build, index }) => {
    const c = client();
    const name = `rej-${index}-${tag}`;
    const entry = await build(publisher, name);
    const result = await c.create(entry, token);
    expectRejected(result, field, says);
    // Nothing was stored under the entry's name.
    const resolved = await c.resolve(`did:reg:main:${entry.entryType || "skill"}:${name}`);
    expect(resolved.code).toBe("not_found");
    c.close();
  });

  it.each(ACCEPTED.map((c, index) => ({ ...c, index })))("accepts $rule", async ({ build, expected, index }) => {
    const c = client();
    const entry = await build(publisher, `acc-${index}-${tag}`);
    const result = await c.create(entry, token);
    expect(result.code, result.message).toBe("ok");
    expect(result.body).toMatchObject({ ...expected(entry), status: "active", signature: entry.signature });
    const resolved = await c.resolve(result.body.entryDid);
    expect(resolved.code).toBe("ok");
    expect(resolved.body).toMatchObject(expected(entry));
    c.close();
  });

  it("checks authentication before the entry's rules", async () => {
    const c = client();
    const entry = await sign(publisher, `noauth-${tag}`, "1.0.0", { bondAmount: "100" });
    const result = await c.create(entry);
    expect(result.code).toBe("unauthenticated");
    if (protocol === "rest") expect(result.httpStatus).toBe(401);
    c.close();
  });

  it("reports every violated field of one request at once", async () => {
    const c = client();
    const name = `multi-${tag}`;
    const entry = await sign(publisher, name, "1.0.0", {
      description: "d".repeat(2001),
      tags: ["ok", "NotOk"],
      contentHash: "sha256:abc",
      bondAmount: "100",
      publishedAt: nowSeconds(10 * 60_000).toISOString(),
    });
    const result = await c.create({ ...entry, signature: "ed25519:short" }, token);
    expect(result.code).toBe("invalid_argument");
    const expectedFields = ["publishedAt", "description", "tags[1]", "contentHash", "bondAmount", "signature"];
    expect([...result.fields].sort()).toEqual([...expectedFields].sort());
    for (const field of expectedFields) expect(readable(result)).toContain(field);
    expect((await c.resolve(`did:reg:main:skill:${name}`)).code).toBe("not_found");
    c.close();
  });

  it('refuses a signature made over other bytes with "signature does not verify"', async () => {
    const c = client();
    const name = `tampered-${tag}`;
    const entry = await sign(publisher, name, "1.0.0");
    const result = await c.create({ ...entry, description: `${entry.description}!` }, token);
    expectRejected(result, "signature", "signature does not verify");
    expect(result.fields).toEqual(["signature"]);
    expect((await c.resolve(`did:reg:main:skill:${name}`)).code).toBe("not_found");
    // The untouched entry is fine, so the change alone broke it.
    expect((await c.create(entry, token)).code).toBe("ok");
    c.close();
  });

  it("refuses a signature by a key other than the publisherDid's", async () => {
    const c = client();
    const other = await createPublisher();
    const name = `otherkey-${tag}`;
    const signedByOther = await other.entry(name, "1.0.0", { publisherDid: publisher.did });
    const result = await c.create(signedByOther, token);
    expectRejected(result, "signature", "signature does not verify");
    expect((await c.resolve(`did:reg:main:skill:${name}`)).code).toBe("not_found");
    c.close();
  });

  it("verifies a publishedAt sent without milliseconds against the normalised payload, and returns .000Z", async () => {
    const c = client();
    const at = nowSeconds();
    // Signed over the toISOString form; sent as "...T10:00:00Z".
    const entry = await sign(publisher, `nomillis-${tag}`, "1.0.0", { publishedAt: at.toISOString() });
    const sent = { ...entry, publishedAt: at.toISOString().replace(".000Z", "Z") };
    expect(sent.publishedAt).toMatch(/T\d\d:\d\d:\d\dZ$/);
    const result = await c.create(sent, token);
    expect(result.code, result.message).toBe("ok");
    expect(result.body.publishedAt).toBe(at.toISOString());
    expect(result.body.publishedAt).toMatch(/\.000Z$/);
    expect((await c.resolve(result.body.entryDid)).body.publishedAt).toBe(at.toISOString());
    c.close();
  });
});

describe("after every rejected create", () => {
  it("no rejected entry was stored", async () => {
    const rows = await db.database.knex("entries").where("name", "like", "rej-%").orWhere("name", "like", "multi-%").count({ n: "*" });
    expect(Number(rows[0]?.n)).toBe(0);
    const names = await db.database.knex("entry_names").where("name", "like", "rej-%").count({ n: "*" });
    expect(Number(names[0]?.n)).toBe(0);
    // The accepted ones were: the query above can see rows.
    const accepted = await db.database.knex("entries").where("name", "like", "acc-%").count({ n: "*" });
    expect(Number(accepted[0]?.n)).toBe(ACCEPTED.length * PROTOCOLS.length);
  });
});
