import { readdir } from "node:fs/promises";
import * as ed from "@noble/ed25519";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { didFromEd25519Key } from "../../src/domain/did-key.js";
import { formatSignature, parseSignature } from "../../src/domain/ed25519-signature.js";
import { entrySigningPayload, type EntrySigningFields } from "../../src/domain/signing-payload.js";
import { childEnv, runCli, temporaryDirectory } from "../support/child-processes.js";
import { PROTOCOLS, registryClient } from "../support/protocol-clients.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { BASE_POINT_SIGNATURE } from "../support/signature-vectors.js";
import { createTestDatabase, usesPostgres, type TestDatabase } from "../support/test-database.js";

/**
 * Weak Ed25519 keys and malleable signatures through the real interfaces (docs/signatures.md,
 * "Which keys and signatures are accepted"). A small-order did:key made one fixed signature valid
 * for every entry; an S with L added is the same signature spelled twice.
 */

const L = 2n ** 252n + 27742317777372353535851937790883648493n;

// The 8 small-order points, then other encodings of points (docs/signatures.md, "Refusal test vectors").
const SMALL_ORDER_KEYS = [
  "0100000000000000000000000000000000000000000000000000000000000000",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "0000000000000000000000000000000000000000000000000000000000000000",
  "0000000000000000000000000000000000000000000000000000000000000080",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
].map((hex) => ({ did: didFromEd25519Key(Buffer.from(hex, "hex")), says: "small-order" }));
const NON_CANONICAL_KEYS = [
  "0100000000000000000000000000000000000000000000000000000000000080",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
  "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
  "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
  "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
].map((hex) => ({ did: didFromEd25519Key(Buffer.from(hex, "hex")), says: "non-canonical" }));
const WEAK_KEYS = [...SMALL_ORDER_KEYS, ...NON_CANONICAL_KEYS];

const UNIVERSAL_SIGNATURE = BASE_POINT_SIGNATURE;

/**
 * The publisher's own valid RFC 8032 signature of `fields`, made with the nonce 0, so R is the
 * identity: node:crypto accepts it up to Node 22 and refuses it from Node 24; the registry always
 * refuses it.
 */
async function signedWithIdentityNonce(fields: Record<string, any>, seed: Uint8Array): Promise<string> {
  const { scalar, pointBytes } = await ed.utils.getExtendedPublicKeyAsync(seed);
  const r = ed.Point.ZERO.toBytes();
  const digest = await ed.hashes.sha512Async(ed.etc.concatBytes(r, pointBytes, entrySigningPayload(fields as EntrySigningFields)));
  const k = digest.reduceRight((value, byte) => (value << 8n) | BigInt(byte), 0n) % L;
  const s = (k * scalar) % L;
  return formatSignature(Uint8Array.from([...r, ...Array.from({ length: 32 }, (_, index) => Number((s >> BigInt(8 * index)) & 0xffn))]));
}

function parseSignatureBytes(signature: string): Uint8Array {
  return Buffer.from(signature.slice("ed25519:".length), "base64url");
}

/** The same signature with L added to S: it still fits in 32 bytes, and [S + L]B = [S]B. */
function withLAddedToS(signature: string): string {
  const bytes = parseSignature(signature) as Uint8Array;
  let s = 0n;
  for (let index = 63; index >= 32; index--) s = (s << 8n) | BigInt(bytes[index]!);
  s += L;
  const twin = Uint8Array.from(bytes);
  for (let index = 32; index < 64; index++) {
    twin[index] = Number(s & 0xffn);
    s >>= 8n;
  }
  return formatSignature(twin);
}

let db: TestDatabase;
let registry: TestRegistry;
const tokens = new Map<string, string>();

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database);
  // Root tokens are stored directly, as one made before keys were checked would be.
  for (const { did } of WEAK_KEYS) tokens.set(did, await registry.accessToken(did, ["registry.publish.skill"]));
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
});

async function storedEntriesOf(publisherDids: readonly string[]): Promise<number> {
  const row = await db.database.knex("entries").whereIn("publisher_did", publisherDids).count({ count: "*" }).first();
  return Number(row!.count);
}

describe.each(PROTOCOLS)("weak keys and malleable signatures over %s", (protocol) => {
  let publisher: TestPublisher;
  let token: string;

  beforeAll(async () => {
    publisher = await createPublisher();
    token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  });

  it("refuses every small-order or non-canonical publisherDid, signed with the universal signature, and stores nothing", async () => {
    const client = registryClient(protocol, registry.url);
    const weakPublisher = await createPublisher();
    for (const [index, { did, says }] of WEAK_KEYS.entries()) {
      const entry = {
        ...(await weakPublisher.entry(`weak-${protocol}-${index}`, "1.0.0")),
        publisherDid: did,
        signature: UNIVERSAL_SIGNATURE,
      };
      const created = await client.create(entry, tokens.get(did));
      expect(created.code, did).toBe("invalid_argument");
      expect(created.fields, did).toEqual(["publisherDid"]);
      expect(created.message, did).toContain(says);
      if (protocol === "rest") expect(created.httpStatus).toBe(400);
      expect((await client.resolve(`did:reg:main:skill:weak-${protocol}-${index}`)).code).toBe("not_found");
    }
    expect(await storedEntriesOf(WEAK_KEYS.map((key) => key.did))).toBe(0);
    client.close();
  });

  it("refuses a create whose signature has L added to S, naming signature, and stores nothing", async () => {
    const client = registryClient(protocol, registry.url);
    const name = `malleable-create-${protocol}`;
    const entry = await publisher.entry(name, "1.0.0");
    const created = await client.create({ ...entry, signature: withLAddedToS(entry.signature) }, token);
    expect(created.code).toBe("invalid_argument");
    expect(created.fields).toEqual(["signature"]);
    expect(created.message).toContain("must be less than the group order L");
    expect((await client.resolve(`did:reg:main:skill:${name}`)).code).toBe("not_found");
    // The signature as made is still accepted.
    expect((await client.create(entry, token)).code).toBe("ok");
    client.close();
  });

  it("refuses a create signed with the nonce 0 (R = the identity), naming signature, and stores nothing", async () => {
    const client = registryClient(protocol, registry.url);
    const name = `identity-nonce-${protocol}`;
    const { signature: _made, ...fields } = await publisher.entry(name, "1.0.0");
    const signature = await signedWithIdentityNonce(fields, publisher.keys.privateKey);
    // A valid signature under RFC 8032's equation: noble's strict verify accepts it.
    expect(
      await ed.verifyAsync(parseSignatureBytes(signature), entrySigningPayload(fields as EntrySigningFields), publisher.keys.publicKey, {
        zip215: false,
      }),
    ).toBe(true);
    const created = await client.create({ ...fields, signature }, token);
    expect(created.code).toBe("invalid_argument");
    expect(created.fields).toEqual(["signature"]);
    expect(created.message).toContain("is a point of small order");
    expect((await client.resolve(`did:reg:main:skill:${name}`)).code).toBe("not_found");
    client.close();
  });

  it("refuses a revocation whose signature has L added to S, naming signature, and the entry stays active", async () => {
    const client = registryClient(protocol, registry.url);
    const did = `did:reg:main:skill:malleable-revoke-${protocol}@1.0.0`;
    expect((await client.create(await publisher.entry(`malleable-revoke-${protocol}`, "1.0.0"), token)).code).toBe("ok");
    const revocation = await publisher.revocation(did, "superseded");
    const revoked = await client.revoke(did, { ...revocation, signature: withLAddedToS(revocation.signature) }, token);
    expect(revoked.code).toBe("invalid_argument");
    expect(revoked.fields).toEqual(["signature"]);
    expect(revoked.message).toContain("must be less than the group order L");
    expect((await client.resolve(did)).body.status).toBe("active");
    client.close();
  });
});

describe("registry root-token create --subject", () => {
  const CLI_MS = 120_000;
  const cases = [
    ["the identity", SMALL_ORDER_KEYS[0]!],
    ["a point of order 8", SMALL_ORDER_KEYS[4]!],
    ["the identity encoded as y = p + 1", NON_CANONICAL_KEYS[4]!],
  ] as const;

  it.each(cases)(
    "refuses %s with a message, exit code 2, and stores nothing",
    async (_label, { did, says }) => {
      const dataDir = await temporaryDirectory("registry-weak-subject-");
      try {
        const env = childEnv(usesPostgres() ? { DATABASE_URL: db.url } : { REGISTRY_DATA_DIR: dataDir.path });
        const description = "weak-keys test";
        const refused = await runCli(
          ["root-token", "create", "--subject", did, "--scopes", "registry.publish.skill", "--description", description],
          env,
        );
        expect(refused.code).toBe(2);
        expect(refused.stdout).toBe("");
        expect(refused.stderr).toContain("--subject");
        expect(refused.stderr).toContain(says);
        if (usesPostgres()) {
          expect(await db.database.knex("root_tokens").where({ description })).toEqual([]);
        } else {
          // Refused before the embedded database was even opened.
          expect(await readdir(dataDir.path)).toEqual([]);
        }
      } finally {
        await dataDir.remove();
      }
    },
    CLI_MS,
  );
});
