import { randomBytes } from "node:crypto";
import { SignJWT, type JWK } from "jose";
import type { RegistryConfig } from "../config.js";
import { PermissionDeniedError, UnauthenticatedError, ViolationList } from "../errors.js";
import { parseBearerCredential } from "./access-token-verifier.js";
import type { AuthRepository, RootTokenRecord } from "./auth-repository.js";
import { createIssuerKeyring, ISSUER_ALGORITHM, type IssuerKeyring, type PublicIssuerJwk } from "./issuer-keys.js";
import { canGrantScope, hashRootToken, isKnownScope, looksLikeRootToken, unknownScopeMessage } from "./root-tokens.js";

export const ACCESS_TOKEN_TYPE = "at+jwt";
export const DEFAULT_TTL_SECONDS = 900;

export type TokenIssuerConfig = Pick<RegistryConfig, "authUrl" | "tokenAudience" | "tokenMaxTtlSeconds" | "entryTypes"> & {
  /** An Ed25519 private JWK from the environment; when absent, keys live in the database. */
  readonly issuerPrivateJwk?: JWK;
};

export interface TokenIssuerOptions {
  readonly repository: AuthRepository;
  readonly config: TokenIssuerConfig;
  /** The issuer's clock; injectable so tests can pin it. */
  readonly clock?: () => Date;
}

export interface IssueTokenRequest {
  readonly scopes: readonly string[];
  readonly ttlSeconds?: number;
}

export interface IssuedToken {
  readonly accessToken: string;
  readonly tokenType: "Bearer";
  /** RFC 3339, UTC. */
  readonly expiresAt: string;
  readonly scopes: string[];
  readonly subject: string;
}

export interface TokenIssuer {
  /**
   * Exchanges a root token, given as the request's authorization header value
   * ("Bearer <root token>"), for an access token. Checks run in the contract's order: the root
   * token (unauthenticated), the request (invalid_argument), then the grant (permission_denied).
   */
  issueToken(authorization: string | null | undefined, request: IssueTokenRequest): Promise<IssuedToken>;
  /**
   * The public keys that verify this issuer's tokens, newest first. `reload` re-reads them now
   * (rate-limited), for a verifier that met a token naming a kid it does not know.
   */
  jwks(options?: { reload?: boolean }): Promise<readonly PublicIssuerJwk[]>;
  /** Makes a new key current; tokens signed by the old one keep verifying until they expire. */
  rotateSigningKey(): Promise<PublicIssuerJwk>;
}

export function createTokenIssuer(options: TokenIssuerOptions): TokenIssuer {
  const { repository, config } = options;
  const clock = options.clock ?? (() => new Date());
  const keyring: IssuerKeyring = createIssuerKeyring({
    repository,
    tokenMaxTtlSeconds: config.tokenMaxTtlSeconds,
    clock,
    privateJwk: config.issuerPrivateJwk,
  });

  async function issueToken(authorization: string | null | undefined, request: IssueTokenRequest): Promise<IssuedToken> {
    const rootToken = await authenticateRootToken(repository, authorization);
    const { scopes, ttlSeconds } = validateRequest(request, config);
    const refused = scopes.find((scope) => !canGrantScope(rootToken.scopes, scope));
    if (refused !== undefined) {
      throw new PermissionDeniedError(`this root token may not grant scope "${refused}"`);
    }
    const { signingKey } = await keyring.current();
    const issuedAt = Math.floor(clock().getTime() / 1000);
    const expiresAt = issuedAt + ttlSeconds;
    const accessToken = await new SignJWT({ scope: scopes.join(" "), client_id: rootToken.id })
      .setProtectedHeader({ alg: ISSUER_ALGORITHM, typ: ACCESS_TOKEN_TYPE, kid: signingKey.kid })
      .setIssuer(config.authUrl)
      .setAudience(config.tokenAudience)
      .setSubject(rootToken.subject)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .setJti(randomBytes(16).toString("base64url"))
      .sign(signingKey.privateKey);
    return {
      accessToken,
      tokenType: "Bearer",
      expiresAt: new Date(expiresAt * 1000).toISOString(),
      scopes,
      subject: rootToken.subject,
    };
  }

  async function jwks(jwksOptions: { reload?: boolean } = {}): Promise<readonly PublicIssuerJwk[]> {
    // The same array while the keyring's cache holds, so a local verifier can keep its imported keys.
    const keySet = jwksOptions.reload === true ? await keyring.reload() : await keyring.current();
    return keySet.publicKeys;
  }

  async function rotateSigningKey(): Promise<PublicIssuerJwk> {
    const keySet = await keyring.rotate();
    const current = keySet.publicKeys.find((key) => key.kid === keySet.signingKey.kid);
    return current!;
  }

  return { issueToken, jwks, rotateSigningKey };
}

async function authenticateRootToken(repository: AuthRepository, authorization: string | null | undefined): Promise<RootTokenRecord> {
  const credential = parseBearerCredential(authorization, "root token");
  // A malformed credential (an access token sent by mistake, a truncated paste) is refused
  // without a database round trip.
  if (!looksLikeRootToken(credential)) throw new UnauthenticatedError("not a valid root token");
  const rootToken = await repository.findActiveRootTokenByHash(hashRootToken(credential));
  if (rootToken === undefined) throw new UnauthenticatedError("root token is unknown or revoked");
  return rootToken;
}

/**
 * The asked scopes, each once and in the order asked, and the lifetime. Every fault of the request
 * is reported at once.
 */
function validateRequest(request: IssueTokenRequest, config: TokenIssuerConfig): { scopes: string[]; ttlSeconds: number } {
  const violations = new ViolationList();
  const scopes = request.scopes ?? [];
  if (scopes.length === 0) violations.add("scopes", "at least one scope is required");
  scopes.forEach((scope, index) => {
    if (!isKnownScope(scope, config.entryTypes)) {
      violations.add(`scopes[${index}]`, unknownScopeMessage(scope, config.entryTypes));
    }
  });
  const ttlSeconds = request.ttlSeconds ?? defaultTtl(config.tokenMaxTtlSeconds);
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > config.tokenMaxTtlSeconds) {
    violations.add("ttlSeconds", `must be an integer from 1 to ${config.tokenMaxTtlSeconds}`);
  }
  violations.throwIfAny();
  return { scopes: [...new Set(scopes)], ttlSeconds };
}

/** 900 s, unless the operator capped lifetimes below that. */
function defaultTtl(maxTtlSeconds: number): number {
  return Math.min(DEFAULT_TTL_SECONDS, maxTtlSeconds);
}
