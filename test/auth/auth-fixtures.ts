import { generateKeyPairSync, randomBytes } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";
import type { AuthRepository, RootTokenRecord } from "../../src/auth/auth-repository.js";
import { generateRootToken, generateRootTokenId, hashRootToken } from "../../src/auth/root-tokens.js";
import type { TokenIssuerConfig } from "../../src/auth/token-issuer.js";
import { didFromEd25519Key } from "../../src/domain/did-key.js";

export const ISSUER_URL = "https://auth.registry.test";
export const AUDIENCE = "registry";

export function issuerConfig(overrides: Partial<TokenIssuerConfig> = {}): TokenIssuerConfig {
  return {
    authUrl: ISSUER_URL,
    tokenAudience: AUDIENCE,
    tokenMaxTtlSeconds: 3600,
    entryTypes: ["skill", "agent"],
    ...overrides,
  };
}

/** The did:key of a fresh key pair; tokens only carry it, nothing here signs with it. */
export function randomDid(): string {
  // A real public key, not random bytes: did:key parsing refuses bytes that are not a curve point.
  const { x } = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" });
  return didFromEd25519Key(Buffer.from(x!, "base64url"));
}

export interface MintedRootToken {
  readonly token: string;
  readonly record: RootTokenRecord;
}

/** Stores a root token the way `registry root-token create` does and returns it with its record. */
export async function mintRootToken(
  repository: AuthRepository,
  scopes: readonly string[],
  subject = randomDid(),
): Promise<MintedRootToken> {
  const token = generateRootToken();
  const record = await repository.createRootToken({
    id: generateRootTokenId(),
    tokenHash: hashRootToken(token),
    subject,
    scopes,
    description: "test",
  });
  return { token, record };
}

export interface Ed25519TestKey {
  readonly privateKey: CryptoKey;
  readonly privateJwk: JWK;
}

export async function ed25519TestKey(): Promise<Ed25519TestKey> {
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  return { privateKey, privateJwk: await exportJWK(privateKey) };
}

export interface ForgeOptions {
  readonly header?: Record<string, unknown>;
  readonly claims?: JWTPayload;
  /** Claims to leave out of the otherwise complete set. */
  readonly omit?: readonly string[];
}

/**
 * A token built by hand with `key`: by default exactly what the issuer would produce, so each
 * test changes one thing and a failure can only come from that one thing.
 */
export async function forgeToken(key: CryptoKey, kid: string, options: ForgeOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: JWTPayload = {
    iss: ISSUER_URL,
    aud: AUDIENCE,
    sub: randomDid(),
    scope: "registry.publish.skill",
    iat: now,
    exp: now + 600,
    jti: randomBytes(8).toString("hex"),
    client_id: generateRootTokenId(),
    ...options.claims,
  };
  for (const name of options.omit ?? []) delete claims[name];
  // A header member given as undefined is left out, so a test can drop typ or kid.
  const header: Record<string, unknown> = { alg: "EdDSA", typ: "at+jwt", kid, ...options.header };
  for (const [name, value] of Object.entries(header)) if (value === undefined) delete header[name];
  return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(key);
}

/** An unsigned JWT (alg "none"), which no verifier may accept. */
export function unsignedToken(kid: string, claims: JWTPayload = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const header = encode({ alg: "none", typ: "at+jwt", kid });
  const payload = encode({
    iss: ISSUER_URL,
    aud: AUDIENCE,
    sub: randomDid(),
    scope: "registry.admin",
    iat: now,
    exp: now + 600,
    jti: "x",
    ...claims,
  });
  return `${header}.${payload}.`;
}

export function decodeJwtPart(token: string, index: 0 | 1): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[index]!, "base64url").toString("utf8"));
}
