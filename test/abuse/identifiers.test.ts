import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPublishingRegistry, type PublishingSetup, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient } from "../support/protocol-clients.js";
import { expectClientError, expectStillServing } from "./client-error.js";
import { http1Request, httpOutcome, rawSocketRequest } from "./raw-wire.js";

/**
 * Malformed identifiers: entry DIDs in paths and request fields (percent-encoding edge cases,
 * overlong, non-ASCII, traversal, double slashes), versions (build metadata, leading zeros, huge
 * numbers), entry types and tags, on resolve, versions, revoke and create, over every protocol.
 * Each is refused as the client's fault (invalid_argument where the contract says so, a 404 for a
 * path no route matches), nothing is stored, and the server keeps answering.
 */

const NAME = "abuse-ids";
const BASE = `did:reg:main:skill:${NAME}`;
const SEEDED = `${BASE}@1.0.0`;

let setup: PublishingSetup;
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.*"]);
  ({ registry, publisher, token } = setup);
  const client = registryClient("rest", registry.url);
  const created = await client.create(await publisher.entry(NAME, "1.0.0"), token);
  expect(created.code, created.message).toBe("ok");
});

afterAll(async () => {
  await setup?.close();
});

/** An entry DID carried as a request field (RPC) or percent-encoded into the path (REST). */
interface DidCase {
  readonly label: string;
  readonly did: string;
  /** The code(s) a resolve answers with; invalid_argument unless given. */
  readonly resolve?: string | readonly string[];
  /** Too long for a request line (node answers 431 before any route): the REST path cases cover it. */
  readonly notInPath?: boolean;
}

const DID_CASES: readonly DidCase[] = [
  { label: "an empty DID", did: "", resolve: ["invalid_argument", "not_found"] },
  { label: "two @ signs", did: `${BASE}@@1.0.0` },
  { label: "two versions", did: `${BASE}@1.0.0@1.0.0` },
  { label: "build metadata", did: `${BASE}@1.0.0+build.7` },
  { label: "a leading zero in the version", did: `${BASE}@01.0.0` },
  { label: "a major past 2^53", did: `${BASE}@9007199254740993.0.0` },
  { label: "a 65-character version", did: `${BASE}@1.0.0-${"a".repeat(59)}` },
  { label: "an empty version", did: `${BASE}@` },
  { label: "a path traversal in the name", did: `${BASE}/../other` },
  { label: "a traversal as the name", did: "did:reg:main:skill:../../etc/passwd" },
  { label: "a slash in the name", did: `${BASE}/versions` },
  { label: "a double slash in the name", did: `did:reg:main:skill://${NAME}` },
  { label: "a percent sign (double encoding)", did: `${BASE}%401.0.0` },
  { label: "NUL in the name", did: `${BASE}\u0000x` },
  { label: "a newline after the DID", did: `${BASE}\n` },
  { label: "a space before the DID", did: ` ${BASE}` },
  { label: "a non-ASCII name", did: "did:reg:main:skill:wéb-search" },
  { label: "an emoji name", did: "did:reg:main:skill:\u{1F600}" },
  { label: "a right-to-left override", did: `did:reg:main:skill:abc\u202Eexe` },
  { label: "a fullwidth look-alike of the name", did: `did:reg:main:skill:ａｂｕｓｅ-ids` },
  { label: "a name of 129 characters", did: `did:reg:main:skill:${"a".repeat(129)}` },
  { label: "a DID of 513 characters", did: `did:reg:${"n".repeat(483)}:skill:${NAME}@1.0.0` },
  { label: "a DID of 100,000 characters", did: `did:reg:main:skill:${"a".repeat(100_000)}`, notInPath: true },
  { label: "upper case", did: BASE.toUpperCase() },
  { label: "a name starting with a dot", did: "did:reg:main:skill:.hidden" },
  { label: "a name starting with a dash", did: "did:reg:main:skill:-x" },
  { label: "too few parts", did: "did:reg:skill" },
  { label: "only the scheme", did: "did:" },
  { label: "a URL instead of a DID", did: "https://example.com/entries/x" },
  { label: "a name named like an Object.prototype member", did: "did:reg:main:skill:__proto__" },
  // Well-formed, naming nothing the registry holds: a resolve finds nothing.
  { label: "an entry type that is not configured", did: `did:reg:main:widget:${NAME}`, resolve: "not_found" },
  { label: "an entry type named like an Object.prototype member", did: `did:reg:main:constructor:${NAME}`, resolve: "not_found" },
];

/** DIDs that carry a version, which a version listing refuses (it lists the versions of a name). */
const VERSIONED_FOR_LISTING: readonly DidCase[] = [{ label: "a versioned DID", did: SEEDED }];

describe.each(PROTOCOLS)("entry DIDs over %s", (protocol) => {
  const didCases = DID_CASES.filter((c) => !(protocol === "rest" && c.notInPath));

  it.each(didCases)("resolve refuses $label", async ({ did, resolve }) => {
    const client = registryClient(protocol, registry.url);
    try {
      expectClientError(await client.resolve(did), resolve ?? "invalid_argument");
    } finally {
      client.close();
    }
    await expectStillServing(registry.url, protocol, SEEDED);
  });

  it.each([...didCases.filter((c) => c.resolve === undefined), ...VERSIONED_FOR_LISTING])("versions refuses $label", async ({ did }) => {
    const client = registryClient(protocol, registry.url);
    try {
      expectClientError(await client.versions(did), "invalid_argument");
    } finally {
      client.close();
    }
  });

  it.each(didCases)("revoke refuses $label, and nothing is revoked", async ({ did, resolve }) => {
    const client = registryClient(protocol, registry.url);
    try {
      // Signed over the DID exactly as addressed, so the DID is the request's only fault.
      const revoked = await client.revoke(did, await publisher.revocation(did, "abuse"), token);
      // A well-formed DID that names nothing: not_found after the token is checked (403 before 404).
      expectClientError(revoked, resolve === undefined ? "invalid_argument" : ["invalid_argument", "not_found", "permission_denied"]);
      expect((await client.resolve(SEEDED)).body).toMatchObject({ status: "active" });
    } finally {
      client.close();
    }
  });
});

/** A request path sent exactly as written, percent-escapes and all. */
interface PathCase {
  readonly label: string;
  readonly path: string;
  readonly method?: string;
  readonly expect?: string | readonly string[];
}

const ENCODED = encodeURIComponent(BASE);
const PATH_CASES: readonly PathCase[] = [
  { label: "%00 in the DID", path: `/v1/entries/${BASE}%00`, expect: "invalid_argument" },
  { label: "%2F..%2F in the DID", path: `/v1/entries/${BASE}%2F..%2Fother`, expect: "invalid_argument" },
  { label: "%2Fversions inside the DID segment", path: `/v1/entries/${BASE}%401.0.0%2Fversions`, expect: "invalid_argument" },
  { label: "%40%40", path: `/v1/entries/${BASE}%40%401.0.0`, expect: "invalid_argument" },
  { label: "%2540 (an encoded percent sign)", path: `/v1/entries/${BASE}%25401.0.0`, expect: "invalid_argument" },
  { label: "%2B for build metadata", path: `/v1/entries/${BASE}%401.0.0%2Bbuild`, expect: "invalid_argument" },
  { label: "a lone %", path: `/v1/entries/${BASE}%`, expect: "invalid_argument" },
  { label: "%zz", path: `/v1/entries/${BASE}%zz`, expect: "invalid_argument" },
  { label: "%C3 (a truncated UTF-8 sequence)", path: `/v1/entries/${BASE}%C3`, expect: "invalid_argument" },
  { label: "%FF (no UTF-8 at all)", path: `/v1/entries/${BASE}%FF`, expect: "invalid_argument" },
  { label: "%ED%A0%80 (an encoded lone surrogate)", path: `/v1/entries/${BASE}%ED%A0%80`, expect: "invalid_argument" },
  { label: "%C0%AF (an overlong encoding of /)", path: `/v1/entries/${BASE}%C0%AF..`, expect: "invalid_argument" },
  { label: "%C3%A9 (é, valid UTF-8, not a name character)", path: `/v1/entries/did:reg:main:skill:w%C3%A9b`, expect: "invalid_argument" },
  { label: "a double slash before the DID", path: `/v1/entries//${ENCODED}`, expect: "not_found" },
  { label: "a double slash at the start", path: `//v1/entries/${ENCODED}`, expect: "not_found" },
  { label: "a double slash before versions", path: `/v1/entries/${ENCODED}//versions`, expect: "not_found" },
  { label: "a trailing slash", path: `/v1/entries/${ENCODED}/`, expect: "not_found" },
  { label: "a dot-dot segment before the DID", path: `/v1/entries/../entries/${ENCODED}`, expect: "not_found" },
  { label: "an encoded dot-dot segment", path: `/v1/entries/%2e%2e/${ENCODED}`, expect: "not_found" },
  {
    label: "a path of 20,000 characters",
    path: `/v1/entries/did:reg:main:skill:${"a".repeat(20_000)}`,
    expect: ["invalid_argument", "http_414", "http_431"],
  },
  { label: "versions of a DID with %40 and a version", path: `/v1/entries/${ENCODED}%401.0.0/versions`, expect: "invalid_argument" },
  { label: "a query parameter with NUL in its name", path: `/v1/entries/${ENCODED}?%00=1`, expect: "invalid_argument" },
  { label: "a __proto__ query parameter", path: `/v1/entries/${ENCODED}?__proto__[did]=x`, expect: "invalid_argument" },
  { label: "a constructor query parameter", path: `/v1/entries/${ENCODED}?constructor=x`, expect: "invalid_argument" },
  { label: "a revoke of a traversal path", method: "DELETE", path: `/v1/entries/${BASE}%2F..%2F..%2Fother`, expect: "invalid_argument" },
];

describe("entry DIDs in REST paths, byte for byte", () => {
  it.each(PATH_CASES)("$label", async ({ path, method, expect: expected }) => {
    const headers: Record<string, string> = {};
    let body: string | undefined;
    if (method === "DELETE") {
      headers.authorization = `Bearer ${token}`;
      headers["content-type"] = "application/json";
      body = JSON.stringify(await publisher.revocation(BASE, "abuse"));
    }
    const response = await http1Request(registry.url, { method: method ?? "GET", path, headers, body });
    expectClientError(httpOutcome(response), expected);
    await expectStillServing(registry.url, "rest", SEEDED);
  });

  it("a path whose DID is percent-encoded throughout resolves (control)", async () => {
    const response = await http1Request(registry.url, { method: "GET", path: `/v1/entries/${encodeURIComponent(SEEDED)}` });
    expect(httpOutcome(response).code).toBe("ok");
  });

  it.each([
    [
      "raw UTF-8 bytes in the path",
      Buffer.concat([
        Buffer.from("GET /v1/entries/did:reg:main:skill:w"),
        Buffer.from("é", "utf8"),
        Buffer.from("b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
      ]),
    ],
    ["a raw space in the path", Buffer.from(`GET /v1/entries/${BASE} x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)],
    ["a raw NUL in the path", Buffer.from(`GET /v1/entries/${BASE}\u0000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, "latin1")],
    ["a path not starting with a slash", Buffer.from(`GET v1/entries/${BASE} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)],
  ])("%s is a client error", async (_label, bytes) => {
    const { status } = await rawSocketRequest(registry.url, bytes);
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBeLessThan(500);
    await expectStillServing(registry.url, "rest", SEEDED);
  });
});

/** A create with one identifier wrong; the entry is signed over exactly what is sent. */
interface CreateCase {
  readonly label: string;
  /** The entry name, version and fields to sign. */
  readonly version?: string;
  readonly name?: string;
  readonly fields?: Record<string, unknown>;
  /** Any of these fields named in the refusal; undefined for the controls, which are accepted. */
  readonly field?: readonly string[];
}

const VERSION = ["version", "entryDid"];
const TYPE = ["entryType", "entryDid"];
const TAG = (index: number) => [`tags[${index}]`, "tags"];

const CREATE_CASES: readonly CreateCase[] = [
  { label: "build metadata", version: "1.0.0+build.1", field: VERSION },
  { label: "a leading zero in the major", version: "01.0.0", field: VERSION },
  { label: "a leading zero in the minor", version: "1.00.0", field: VERSION },
  { label: "a leading zero in a numeric prerelease", version: "1.0.0-01", field: VERSION },
  { label: "a major past 2^53", version: "9007199254740993.0.0", field: VERSION },
  { label: "a 30-digit major", version: "123456789012345678901234567890.0.0", field: VERSION },
  { label: "a 65-character version", version: `1.0.0-${"a".repeat(59)}`, field: VERSION },
  { label: "a leading v", version: "v1.0.0", field: VERSION },
  { label: "two parts", version: "1.0", field: VERSION },
  { label: "an empty prerelease", version: "1.0.0-", field: VERSION },
  { label: "an empty prerelease identifier", version: "1.0.0-a..b", field: VERSION },
  { label: "a non-ASCII prerelease", version: "1.0.0-β", field: VERSION },
  { label: "a negative major", version: "-1.0.0", field: VERSION },
  { label: "a version that differs from the DID's", fields: { version: "1.0.1" }, field: VERSION },
  { label: "a 64-character version (control)", version: `1.0.0-${"a".repeat(58)}` },
  { label: "a 20-digit prerelease number (control)", version: "1.0.0-12345678901234567890" },
  { label: "an entry type that is not configured", fields: { entryType: "widget" }, field: TYPE },
  { label: "an entry type in upper case", fields: { entryType: "Skill" }, field: TYPE },
  { label: "an empty entry type", fields: { entryType: "", entryDid: `did:reg:main::abuse-ids-type@1.0.0` }, field: TYPE },
  { label: "the entry type constructor", fields: { entryType: "constructor" }, field: TYPE },
  { label: "the entry type toString", fields: { entryType: "toString" }, field: TYPE },
  { label: "the entry type __proto__", fields: { entryType: "__proto__" }, field: TYPE },
  { label: "the entry type hasOwnProperty", fields: { entryType: "hasOwnProperty" }, field: TYPE },
  { label: "an entry type of 10,000 characters", fields: { entryType: "s".repeat(10_000) }, field: TYPE },
  { label: "a non-ASCII entry type", fields: { entryType: "skíll" }, field: TYPE },
  {
    label: "an entry type that differs from the DID's",
    fields: { entryType: "agent", entryDid: "did:reg:main:skill:abuse-ids-mismatch@1.0.0" },
    field: TYPE,
  },
  { label: "a name of 129 characters", name: "a".repeat(129), field: ["entryDid"] },
  { label: "a name in upper case", name: "Web-Search", field: ["entryDid"] },
  { label: "a name starting with a dash", name: "-x", field: ["entryDid"] },
  { label: "a name starting with a dot", name: ".x", field: ["entryDid"] },
  { label: "the name ..", name: "..", field: ["entryDid"] },
  { label: "a slash in the name", name: "a/b", field: ["entryDid"] },
  { label: "a non-ASCII name", name: "wéb", field: ["entryDid"] },
  { label: "two @ signs in the DID", fields: { entryDid: "did:reg:main:skill:abuse-ids-at@@1.0.0" }, field: ["entryDid"] },
  { label: "a DID of 513 characters", fields: { entryDid: `did:reg:${"n".repeat(478)}:skill:abuse-ids-long@1.0.0` }, field: ["entryDid"] },
  { label: "an upper-case DID method", fields: { entryDid: "did:REG:main:skill:abuse-ids-method@1.0.0" }, field: ["entryDid"] },
  { label: "a tag in upper case", fields: { tags: ["Search"] }, field: TAG(0) },
  { label: "an empty tag", fields: { tags: [""] }, field: TAG(0) },
  { label: "a tag starting with a dash", fields: { tags: ["ok", "-x"] }, field: TAG(1) },
  { label: "a tag of 65 characters", fields: { tags: ["t".repeat(65)] }, field: TAG(0) },
  { label: "a tag with a space", fields: { tags: ["a b"] }, field: TAG(0) },
  { label: "a non-ASCII tag", fields: { tags: ["wéb"] }, field: TAG(0) },
  { label: "the tag __proto__", fields: { tags: ["__proto__"] }, field: TAG(0) },
  { label: "a duplicate tag", fields: { tags: ["web", "web"] }, field: [...TAG(1), "tags"] },
  { label: "33 tags", fields: { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, field: ["tags"] },
  { label: "32 tags of 64 characters (control)", fields: { tags: Array.from({ length: 32 }, (_, i) => `t${i}`.padEnd(64, "x")) } },
  { label: "the tag constructor (control: a plain word)", fields: { tags: ["constructor"] } },
];

describe.each(PROTOCOLS)("identifiers in a create over %s", (protocol) => {
  it.each(CREATE_CASES.map((c, index) => ({ ...c, index })))("$label", async ({ version, name, fields, field, index }) => {
    const entryName = name ?? `abuse-ids-${index}-${protocol}`;
    const signed = await publisher.entry(entryName, version ?? "1.0.0", fields);
    const client = registryClient(protocol, registry.url);
    try {
      const result = await client.create(signed, token);
      if (field === undefined) {
        expect(result.code, result.message).toBe("ok");
        return;
      }
      expectClientError(result, "invalid_argument");
      expect(
        result.fields.some((f) => field.includes(f)),
        `fields ${JSON.stringify(result.fields)}: ${result.message}`,
      ).toBe(true);
      // Nothing was stored under the name the DID carries.
      const stored = await client.versions(`did:reg:main:skill:${entryName}`);
      expect(stored.code).not.toBe("ok");
    } finally {
      client.close();
    }
  });
});
