import { randomBytes } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateEntryRequestSchema } from "../../gen/registry/v1/registry_service_pb.js";
import { forgeToken, unsignedToken, type ForgeOptions } from "../auth/auth-fixtures.js";
import { startPublishingRegistry, type PublishingSetup, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import type { TestDatabase } from "../support/test-database.js";
import type { Transport } from "./abuse-transports.js";
import { expectClientError, expectStillServing } from "./client-error.js";
import { callRaw, envelope, http1Request, http2Request, httpOutcome, outcomeOf, rawSocketRequest, type WireOutcome } from "./raw-wire.js";

/**
 * Authorization an attacker controls: malformed headers (no scheme, another scheme, huge,
 * non-ASCII, odd spacing), and forged or misused JWTs (alg none, HS256 keyed with the published
 * key, wrong typ, expired, issued in the future, no exp, another issuer or audience, unknown or
 * hostile kid, truncated, a root token in place of an access token and the other way round). Every
 * one is unauthenticated (401), on every protocol, never a server error; the write stores nothing.
 * The controls show the same request goes through with a well-formed header.
 */

/** What the fixture's server puts in (and expects of) its tokens. */
const ISSUER = "http://registry.test";
const AUDIENCE = "registry";
const TRANSPORTS: readonly Transport[] = ["rest", "connect-json", "grpc-web", "grpc"];
const SEEDED_NAME = "abuse-tokens";
const SEEDED = `did:reg:main:skill:${SEEDED_NAME}@1.0.0`;

let setup: PublishingSetup;
let db: TestDatabase;
let registry: TestRegistry;
let publisher: TestPublisher;
/** A genuine access token of the publisher. */
let token: string;
/** The issuer's signing key, read from its table, to forge tokens that differ in one thing only. */
let issuerKey: { kid: string; privateKey: CryptoKey; publicX: string };
/** A key the issuer never published. */
let stranger: { privateKey: CryptoKey; publicJwk: JWK };

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  ({ db, registry, publisher, token } = setup);
  const row = await db.database.knex("issuer_keys").whereNull("retired_at").first();
  const privateJwk: JWK = typeof row.private_jwk === "string" ? JSON.parse(row.private_jwk) : row.private_jwk;
  issuerKey = { kid: row.kid, privateKey: (await importJWK(privateJwk, "EdDSA")) as CryptoKey, publicX: privateJwk.x! };
  const pair = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  stranger = { privateKey: pair.privateKey, publicJwk: await exportJWK(pair.publicKey) };
  const seeded = await callRaw("rest", registry.url, "CreateEntry", {
    body: JSON.stringify(await publisher.entry(SEEDED_NAME, "1.0.0")),
    headers: { authorization: `Bearer ${token}` },
  });
  expect(seeded.code, seeded.message).toBe("ok");
});

afterAll(async () => {
  await setup?.close();
});

/** A token as the issuer would make it for the publisher, with one thing changed. */
function forge(options: ForgeOptions & { key?: CryptoKey } = {}): Promise<string> {
  const { key, claims, ...rest } = options;
  return forgeToken(key ?? issuerKey.privateKey, issuerKey.kid, {
    ...rest,
    claims: { iss: ISSUER, aud: AUDIENCE, sub: publisher.did, ...claims },
  });
}

const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
/** Header bytes as node writes a string: one byte per character, so UTF-8 travels as its bytes. */
const utf8Bytes = (text: string) => Buffer.from(text, "utf8").toString("latin1");

interface HeaderCase {
  readonly label: string;
  /** The authorization header value; undefined sends none. */
  readonly header: () => Promise<string | undefined> | string | undefined;
  /** Transports that cannot carry the header (HTTP/2 refuses oversized header blocks before any stream). */
  readonly skip?: readonly Transport[];
  /** unauthenticated unless given. */
  readonly expect?: string | readonly string[];
}

const HEADER_CASES: readonly HeaderCase[] = [
  // The header itself.
  { label: "no authorization header", header: () => undefined },
  { label: "an empty header", header: () => "" },
  { label: "only spaces", header: () => "     " },
  { label: "the scheme alone", header: () => "Bearer" },
  { label: "the scheme and a space", header: () => "Bearer " },
  { label: "no scheme, the token alone", header: () => token },
  { label: "the Basic scheme", header: () => `Basic ${Buffer.from(`${publisher.did}:${token}`).toString("base64")}` },
  { label: "the Token scheme", header: () => `Token ${token}` },
  { label: "a colon after the scheme", header: () => `Bearer: ${token}` },
  { label: "a tab after the scheme", header: () => `Bearer\t${token}` },
  { label: "a second word after the token", header: () => `Bearer ${token} extra` },
  { label: "two credentials", header: () => `Bearer ${token}, Bearer ${token}` },
  { label: "the token quoted", header: () => `Bearer "${token}"` },
  { label: "8 KiB of garbage", header: () => `Bearer ${"A".repeat(8 * 1024)}` },
  // Past node's 16 KiB header limit: HTTP/1.1 answers 431 before any route runs.
  { label: "64 KiB of garbage", header: () => `Bearer ${"A".repeat(64 * 1024)}`, expect: ["unauthenticated", "http_431"], skip: ["grpc"] },
  { label: "40 KiB of garbage over HTTP/2", header: () => `Bearer ${"A".repeat(40 * 1024)}`, skip: ["rest", "connect-json", "grpc-web"] },
  { label: "latin-1 bytes", header: () => "Bearer tok\u00e9n" },
  { label: "UTF-8 bytes", header: () => utf8Bytes("Bearer 令牌") },
  { label: "UTF-8 bytes around a genuine token", header: () => utf8Bytes(`Bearer ${token}\u00a0`) },
  // JWTs that are no JWT.
  { label: "a truncated token (no signature)", header: () => `Bearer ${token.split(".").slice(0, 2).join(".")}` },
  { label: "a token cut mid-signature", header: () => `Bearer ${token.slice(0, -10)}` },
  { label: "a token with a character changed in its signature", header: () => `Bearer ${withCharacterChanged(token, token.length - 20)}` },
  {
    label: "a token with a character changed in its payload",
    header: () => `Bearer ${withCharacterChanged(token, token.indexOf(".") + 10)}`,
  },
  { label: "a token of 3,000 segments", header: () => `Bearer ${Array(3000).fill("e30").join(".")}` },
  { label: "a header that is not JSON", header: () => `Bearer ${b64("not json")}.${b64({ sub: "x" })}.${b64("sig")}` },
  {
    label: "a payload that is not JSON",
    header: () => `Bearer ${b64({ alg: "EdDSA", typ: "at+jwt", kid: issuerKey.kid })}.${b64("{")}.${b64("sig")}`,
  },
  { label: "characters outside base64url", header: () => `Bearer ${token.replace(/\./g, "+.")}` },
  {
    label: "a JWE-shaped token (five parts)",
    header: () => `Bearer ${b64({ alg: "dir", enc: "A256GCM" })}..${b64("iv")}.${b64("ct")}.${b64("tag")}`,
  },
  // Signed JWTs the verifier must refuse.
  {
    label: 'alg "none"',
    header: () => `Bearer ${unsignedToken(issuerKey.kid, { iss: ISSUER, aud: AUDIENCE, sub: publisher.did, scope: "registry.publish.*" })}`,
  },
  { label: "HS256 keyed with the published public key", header: () => hs256WithPublicKey() },
  { label: 'typ "JWT"', header: async () => `Bearer ${await forge({ header: { typ: "JWT" } })}` },
  { label: "no typ", header: async () => `Bearer ${await forge({ header: { typ: undefined } })}` },
  { label: "expired beyond the skew", header: async () => `Bearer ${await forge({ claims: { iat: now() - 1000, exp: now() - 120 } })}` },
  {
    label: "issued an hour in the future",
    header: async () => `Bearer ${await forge({ claims: { iat: now() + 3600, exp: now() + 7200 } })}`,
  },
  { label: "not valid before an hour from now", header: async () => `Bearer ${await forge({ claims: { nbf: now() + 3600 } })}` },
  { label: "no exp", header: async () => `Bearer ${await forge({ omit: ["exp"] })}` },
  { label: "exp as a string", header: async () => `Bearer ${await forge({ claims: { exp: String(now() + 600) as never } })}` },
  { label: "another issuer", header: async () => `Bearer ${await forge({ claims: { iss: "http://evil.test" } })}` },
  { label: "another audience", header: async () => `Bearer ${await forge({ claims: { aud: "someone-else" } })}` },
  {
    label: "an unknown kid, signed by another key",
    header: async () => `Bearer ${await forge({ key: stranger.privateKey, header: { kid: "unknown-kid" } })}`,
  },
  { label: "the issuer's kid, signed by another key", header: async () => `Bearer ${await forge({ key: stranger.privateKey })}` },
  {
    label: "another key embedded as jwk",
    header: async () => `Bearer ${await forge({ key: stranger.privateKey, header: { kid: undefined, jwk: stranger.publicJwk } })}`,
  },
  {
    label: "a jku pointing elsewhere",
    header: async () => `Bearer ${await forge({ key: stranger.privateKey, header: { kid: "k", jku: "http://127.0.0.1:1/jwks.json" } })}`,
  },
  {
    label: "a crit header the verifier does not know",
    header: async () =>
      `Bearer ${await signedByIssuer({ alg: "EdDSA", typ: "at+jwt", kid: issuerKey.kid, crit: ["x-unknown"], "x-unknown": 1 })}`,
  },
  {
    label: "a kid with a path traversal",
    header: async () => `Bearer ${await forge({ key: stranger.privateKey, header: { kid: "../../../etc/passwd" } })}`,
  },
  { label: "a kid with SQL", header: async () => `Bearer ${await forge({ key: stranger.privateKey, header: { kid: "' OR '1'='1" } })}` },
  { label: "a kid with NUL", header: async () => `Bearer ${await forge({ key: stranger.privateKey, header: { kid: "k\u0000" } })}` },
  { label: "a kid of 4 KiB", header: async () => `Bearer ${await forge({ key: stranger.privateKey, header: { kid: "k".repeat(4096) } })}` },
  {
    label: "a kid that is an object",
    header: async () => `Bearer ${await forge({ key: stranger.privateKey, header: { kid: { $ne: null } } })}`,
  },
  {
    label: "a scope that is a list",
    header: async () => `Bearer ${await forge({ claims: { scope: ["registry.publish.skill"] as never } })}`,
  },
  // Signed by the issuer itself, for a subject that is not the publisher: authentic, not authorized.
  {
    label: "a subject with NUL",
    expect: "permission_denied",
    header: async () => `Bearer ${await forge({ claims: { sub: `${publisher.did}\u0000` } })}`,
  },
  // Credentials of the other kind.
  {
    label: "a root token in place of an access token",
    header: async () => `Bearer ${await registry.rootToken(publisher.did, ["registry.publish.skill"])}`,
  },
  { label: "a root-token-shaped garbage string", header: () => `Bearer regrt_${randomBytes(32).toString("base64url")}` },
];

/** `jwt` with the character at `index` replaced by another base64url character. */
function withCharacterChanged(jwt: string, index: number): string {
  return `${jwt.slice(0, index)}${jwt[index] === "A" ? "B" : "A"}${jwt.slice(index + 1)}`;
}

/** A JWT with exactly this header, signed by the issuer's key (jose refuses to sign some headers). */
async function signedByIssuer(header: Record<string, unknown>): Promise<string> {
  const claims = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: publisher.did,
    scope: "registry.publish.skill",
    iat: now(),
    exp: now() + 600,
    jti: randomBytes(8).toString("hex"),
  };
  const input = `${b64(header)}.${b64(claims)}`;
  const signature = await crypto.subtle.sign({ name: "Ed25519" }, issuerKey.privateKey, new TextEncoder().encode(input));
  return `${input}.${Buffer.from(signature).toString("base64url")}`;
}

/** HS256 keyed with the issuer's public key bytes: the algorithm-confusion forgery. */
async function hs256WithPublicKey(): Promise<string> {
  const jwt = await new SignJWT({ scope: "registry.publish.skill" })
    .setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: issuerKey.kid })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(publisher.did)
    .setIssuedAt(now())
    .setExpirationTime(now() + 600)
    .setJti("hs256")
    .sign(Buffer.from(issuerKey.publicX, "base64url"));
  return `Bearer ${jwt}`;
}

/** A signed create body of a fresh entry for `transport`. */
async function createBody(transport: Transport, name: string): Promise<string | Uint8Array> {
  const entry = await publisher.entry(name, "1.0.0");
  if (transport === "rest") return JSON.stringify(entry);
  if (transport === "connect-json") return JSON.stringify({ entry });
  return toBinary(CreateEntryRequestSchema, create(CreateEntryRequestSchema, { entry: entry as never }));
}

async function createWith(transport: Transport, name: string, authorization: string | undefined): Promise<WireOutcome> {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  return callRaw(transport, registry.url, "CreateEntry", { body: await createBody(transport, name), headers });
}

const FOLLOW_UP = { rest: "rest", "connect-json": "connect", connect: "connect", "grpc-web": "grpc-web", grpc: "grpc" } as const;

describe.each(TRANSPORTS)("authorization of a create over %s", (transport) => {
  const rows = HEADER_CASES.map((c, index) => ({ ...c, index })).filter((c) => !c.skip?.includes(transport));

  it.each(rows)("refuses $label", async ({ header, index, expect: expected }) => {
    const name = `abuse-token-${index}-${transport}`;
    const result = await createWith(transport, name, await header());
    expectClientError(result, expected ?? "unauthenticated");
    if (result.code === "unauthenticated" && result.httpStatus !== undefined) expect(result.httpStatus).toBe(401);
    expect(result.message ?? "").not.toContain(token.slice(0, 20));
    // Nothing was published, and ordinary calls are still answered.
    const resolved = await http1Request(registry.url, {
      method: "GET",
      path: `/v1/entries/${encodeURIComponent(`did:reg:main:skill:${name}`)}`,
    });
    expect(httpOutcome(resolved).code).toBe("not_found");
    await expectStillServing(registry.url, FOLLOW_UP[transport], SEEDED);
  });

  it.each([
    ["the token as issued", () => `Bearer ${token}`],
    ['a lower-case "bearer" (schemes are case-insensitive)', () => `bearer ${token}`],
    ["several spaces after the scheme (RFC 6750: 1*SP)", () => `Bearer    ${token}`],
    ["a token forged with the issuer's key and the expected claims", async () => `Bearer ${await forge()}`],
  ] as const)("accepts %s (control)", async (_label, header) => {
    const result = await createWith(transport, `abuse-token-ok-${randomBytes(4).toString("hex")}`, await header());
    expect(result.code, result.message).toBe("ok");
  });
});

describe("authorization headers node's client will not write", () => {
  it.each([
    ["a control character", Buffer.from("Bearer a\u0001b", "latin1")],
    ["a DEL character", Buffer.from("Bearer a\u007fb", "latin1")],
    ["a bare carriage return", Buffer.from("Bearer a\rb", "latin1")],
    ["a NUL", Buffer.from("Bearer a\u0000b", "latin1")],
  ])("%s in the header is a client error", async (_label, value) => {
    const body = await createBody("rest", `abuse-token-raw-${randomBytes(4).toString("hex")}`);
    const head = `POST /v1/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body as string)}\r\nConnection: close\r\nAuthorization: `;
    const { status } = await rawSocketRequest(
      registry.url,
      Buffer.concat([Buffer.from(head), value, Buffer.from(`\r\n\r\n${body as string}`)]),
    );
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBeLessThan(500);
    await expectStillServing(registry.url, "rest", SEEDED);
  });

  it("two authorization headers, the first malformed, are refused", async () => {
    const body = (await createBody("rest", `abuse-token-two-${randomBytes(4).toString("hex")}`)) as string;
    const request = `POST /v1/entries HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nAuthorization: Bearer garbage\r\nAuthorization: Bearer ${token}\r\n\r\n${body}`;
    const { status } = await rawSocketRequest(registry.url, Buffer.from(request));
    expect(status).toBe(401);
  });
});

describe("header blocks past HTTP/2's header list limit", () => {
  // Past node's 64 KiB header list limit, nghttp2 refuses the stream before any handler runs: the
  // refusal is HTTP/2's (RST_STREAM), which gRPC clients report in their own words. What matters
  // here is that it costs the server nothing: the session and every other stream carry on.
  it.each([70, 300])("an authorization header of %i KiB is refused at the stream, and the server keeps serving", async (kib) => {
    const answer = await http2Request(registry.url, {
      path: "/registry.v1.RegistryService/CreateEntry",
      headers: { "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${"A".repeat(kib * 1024)}` },
      body: envelope((await createBody("grpc", `abuse-token-h2-${kib}`)) as Uint8Array),
    }).then(
      (response) => outcomeOf("grpc", response),
      (error: Error) => error,
    );
    if (answer instanceof Error) expect(answer.message).toMatch(/RST_STREAM/);
    else expectClientError(answer, "unauthenticated");
    await expectStillServing(registry.url, "grpc", SEEDED);
  });
});

describe("POST /v1/tokens with credentials that are no root token", () => {
  const issue = async (authorization: string | undefined) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (authorization !== undefined) headers.authorization = authorization;
    return httpOutcome(
      await http1Request(registry.url, { path: "/v1/tokens", headers, body: JSON.stringify({ scopes: ["registry.publish.skill"] }) }),
    );
  };

  const notRootTokens: readonly (readonly [string, () => Promise<string> | string])[] = [
    ["an access token in place of a root token", () => `Bearer ${token}`],
    ["the root-token prefix alone", () => "Bearer regrt_"],
    ["a root token of 8 KiB", () => `Bearer regrt_${"A".repeat(8 * 1024)}`],
    ["a root token with latin-1 bytes", () => "Bearer regrt_t\u00f6ken"],
    ["a root token with UTF-8 bytes", () => utf8Bytes("Bearer regrt_令牌")],
    ["a root token with SQL", () => "Bearer regrt_' OR '1'='1"],
    ["a revoked-looking garbage token", () => `Bearer regrt_${randomBytes(32).toString("base64url")}`],
    ["no scheme", async () => registry.rootToken(publisher.did, ["registry.publish.skill"])],
    ["the Basic scheme", async () => `Basic ${await registry.rootToken(publisher.did, ["registry.publish.skill"])}`],
  ];

  it.each(notRootTokens)("%s is 401", async (_label, header) => {
    const result = await issue(await header());
    expectClientError(result, "unauthenticated");
    expect(result.httpStatus).toBe(401);
  });

  it("a genuine root token is exchanged (control)", async () => {
    expect((await issue(`Bearer ${await registry.rootToken(publisher.did, ["registry.publish.skill"])}`)).code).toBe("ok");
  });

  it.each([
    ["ttlSeconds 1e20", { scopes: ["registry.publish.skill"], ttlSeconds: 1e20 }],
    ["ttlSeconds -1", { scopes: ["registry.publish.skill"], ttlSeconds: -1 }],
    ["ttlSeconds as a string of 30 digits", { scopes: ["registry.publish.skill"], ttlSeconds: "9".repeat(30) }],
    ["a scope named like an Object.prototype member", { scopes: ["registry.publish.constructor"] }],
    ["the scope __proto__", { scopes: ["__proto__"] }],
    ["1,000 unknown scopes", { scopes: Array.from({ length: 1000 }, (_, i) => `registry.publish.t${i}`) }],
    ["a scope of 10,000 characters", { scopes: [`registry.publish.${"s".repeat(10_000)}`] }],
  ] as const)("a genuine root token asking for %s is a client error", async (_label, body) => {
    const root = await registry.rootToken(publisher.did, ["registry.publish.*"]);
    const response = await http1Request(registry.url, {
      path: "/v1/tokens",
      headers: { "content-type": "application/json", authorization: `Bearer ${root}` },
      body: JSON.stringify(body),
    });
    expectClientError(httpOutcome(response), ["invalid_argument", "permission_denied"]);
  });
});

describe("reads need no credentials", () => {
  it.each([
    ["a malformed authorization header", "Bearer garbage"],
    ["an expired token's shape", "Bearer e30.e30.e30"],
    ["8 KiB of garbage", `Bearer ${"A".repeat(8 * 1024)}`],
  ])("a resolve with %s is answered as a resolve", async (_label, authorization) => {
    const response = await http1Request(registry.url, {
      method: "GET",
      path: `/v1/entries/${encodeURIComponent(SEEDED)}`,
      headers: { authorization },
    });
    expect(httpOutcome(response).code).toBe("ok");
  });
});
