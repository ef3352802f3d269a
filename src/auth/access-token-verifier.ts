import { createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify, type JWK, type JWTVerifyGetKey } from "jose";
import { RegistryError, UnauthenticatedError, UnavailableError } from "../errors.js";
import type { RootTokenRecord } from "./auth-repository.js";
import type { Principal } from "./principal.js";
import { isRootTokenId } from "./root-tokens.js";

/**
 * Verifies access tokens and turns them into Principals. Every way a token can be wrong is
 * unauthenticated, with a short message that never repeats the token; only failing to obtain the
 * issuer's keys is unavailable, since then the token may well be fine.
 */

/**
 * Keys from this process: the issuer's `jwks`. `reload` asks for a fresh read, used once when a
 * token names a kid not among the keys, which is how a rotation by another process shows up.
 */
export type LocalKeySource = (options?: { reload?: boolean }) => Promise<readonly JWK[]>;

export interface AccessTokenVerifierOptions {
  /** The expected `iss`: the issuer's base URL. */
  readonly issuer: string;
  /** The expected `aud`. */
  readonly audience: string;
  /** A local key source, or the URL of the issuer's JWKS (`${authUrl}/.well-known/jwks.json`). */
  readonly keys: LocalKeySource | URL | string;
  /** Largest clock difference with the issuer that is tolerated; the contract allows 30 s. */
  readonly clockToleranceSeconds?: number;
  /**
   * Oldest `iat` accepted, a backstop on top of `exp`. Setting it also makes jose refuse an `iat`
   * in the future. Defaults to the largest lifetime the issuer can be configured with.
   */
  readonly maxTokenAgeSeconds?: number;
  /** The verifier's clock; injectable so tests can pin it. */
  readonly clock?: () => Date;
  /** Remote JWKS tuning. */
  readonly remote?: RemoteJwksOptions;
  /**
   * Reads a root token by id from the issuer's database, so that an access token stops working
   * the moment its root token (its `client_id`) is revoked. Absent, revocation is not checked.
   */
  readonly findRootToken?: RootTokenLookup;
}

/** The root token with this id as stored now (never cached), or undefined if this database has none. */
export type RootTokenLookup = (id: string) => Promise<Pick<RootTokenRecord, "revokedAt"> | undefined>;

export interface RemoteJwksOptions {
  /** Least time between two fetches, also for unknown kids (which is how rotation propagates). */
  readonly cooldownMs?: number;
  /** Keys are fetched again after this long even when every kid is known. */
  readonly cacheMaxAgeMs?: number;
  readonly timeoutMs?: number;
}

export interface AccessTokenVerifier {
  /** The Principal of the authorization header's access token, or UnauthenticatedError. */
  authenticate(authorization: string | null | undefined): Promise<Principal>;
}

export const ACCESS_TOKEN_ALGORITHMS = ["EdDSA"];
const ACCESS_TOKEN_TYPE = "at+jwt";
/** `client_id` names the root token the access token was issued with (RFC 9068 §2.2). */
const REQUIRED_CLAIMS = ["exp", "iat", "sub", "scope", "jti", "client_id"];
const DEFAULT_CLOCK_TOLERANCE_SECONDS = 30;
const DEFAULT_MAX_TOKEN_AGE_SECONDS = 86_400;
/** Verified tokens remembered per process; the oldest are forgotten first. */
const MAX_VERIFIED_TOKENS = 10_000;
/** A JWT of ours is a few hundred characters; anything far longer is not one. */
const MAX_TOKEN_CHARS = 8_192;

export function createAccessTokenVerifier(options: AccessTokenVerifierOptions): AccessTokenVerifier {
  const resolveKey = guardKeyResolution(
    typeof options.keys === "function" ? localKeyResolver(options.keys) : remoteKeyResolver(new URL(options.keys), options.remote ?? {}),
  );
  const verifyOptions = {
    algorithms: ACCESS_TOKEN_ALGORITHMS,
    typ: ACCESS_TOKEN_TYPE,
    issuer: options.issuer,
    audience: options.audience,
    requiredClaims: REQUIRED_CLAIMS,
    clockTolerance: options.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS,
    maxTokenAge: options.maxTokenAgeSeconds ?? DEFAULT_MAX_TOKEN_AGE_SECONDS,
  };

  // A publisher sends many writes with one token: its signature is checked once, and the result
  // kept until the token's own expiry (without the clock tolerance, so never longer than a fresh
  // verification would accept it). Keys only retire after every token they signed has expired,
  // so a cached answer cannot outlive the key that proved it. Revocation of the root token is
  // not part of what is kept: it is read on every call.
  const verified = new Map<string, VerifiedToken>();

  async function authenticate(authorization: string | null | undefined): Promise<Principal> {
    const { principal, rootTokenId } = await verify(authorization);
    if (options.findRootToken !== undefined) await refuseRevokedRootToken(options.findRootToken, rootTokenId);
    return principal;
  }

  async function verify(authorization: string | null | undefined): Promise<VerifiedToken> {
    const token = parseBearerCredential(authorization, "access token");
    if (token.length > MAX_TOKEN_CHARS) throw new UnauthenticatedError("access token is malformed");
    const nowMs = (options.clock?.() ?? new Date()).getTime();
    const known = verified.get(token);
    if (known !== undefined) {
      if (known.expiresAtMs > nowMs) return known;
      verified.delete(token);
    }
    let payload: Record<string, unknown>;
    try {
      const currentDate = options.clock?.();
      ({ payload } = await jwtVerify(token, resolveKey, { ...verifyOptions, currentDate }));
    } catch (error) {
      if (error instanceof RegistryError) throw error;
      throw new UnauthenticatedError(describeRejection(error), { cause: error });
    }
    const result = { principal: principalOf(payload), rootTokenId: rootTokenIdOf(payload), expiresAtMs: Number(payload.exp) * 1000 };
    if (verified.size >= MAX_VERIFIED_TOKENS) verified.delete(verified.keys().next().value as string);
    verified.set(token, result);
    return result;
  }

  return { authenticate };
}

interface VerifiedToken {
  readonly principal: Principal;
  /** The `client_id` claim: the root token this access token was issued with. */
  readonly rootTokenId: string;
  readonly expiresAtMs: number;
}

/**
 * Refuses an access token whose root token is revoked. A root token this database does not hold
 * is let through: its issuer keeps its root tokens elsewhere (a registry-only process on a
 * database of its own), and the signature already proved the token is that issuer's.
 */
async function refuseRevokedRootToken(findRootToken: RootTokenLookup, rootTokenId: string): Promise<void> {
  const rootToken = await findRootToken(rootTokenId);
  if (rootToken?.revokedAt != null) {
    throw new UnauthenticatedError(
      `access token's root token ${rootTokenId} was revoked at ${rootToken.revokedAt.toISOString()}; exchange an unrevoked root token for a new access token`,
    );
  }
}

/**
 * The credential of an "authorization: Bearer <credential>" header value. `what` names the
 * credential in messages ("access token", "root token"); the credential itself never appears.
 */
export function parseBearerCredential(authorization: string | null | undefined, what: string): string {
  const header = authorization?.trim() ?? "";
  if (header === "") {
    throw new UnauthenticatedError(`${what} required: send "authorization: Bearer <${what}>"`);
  }
  const match = /^Bearer +([^\s]+)$/i.exec(header);
  if (match === null) {
    throw new UnauthenticatedError(`authorization header must be "Bearer <${what}>"`);
  }
  return match[1]!;
}

function principalOf(payload: Record<string, unknown>): Principal {
  const { sub, scope, jti } = payload;
  if (typeof sub !== "string" || sub === "") throw new UnauthenticatedError('access token "sub" must be a DID');
  if (typeof scope !== "string") throw new UnauthenticatedError('access token "scope" must be a string');
  if (typeof jti !== "string" || jti === "") throw new UnauthenticatedError('access token "jti" must be a string');
  return { subject: sub, scopes: scope.split(" ").filter((item) => item !== "") };
}

function rootTokenIdOf(payload: Record<string, unknown>): string {
  const { client_id: clientId } = payload;
  if (typeof clientId !== "string" || !isRootTokenId(clientId)) {
    throw new UnauthenticatedError('access token "client_id" must be a root token id');
  }
  return clientId;
}

function localKeyResolver(source: LocalKeySource): JWTVerifyGetKey {
  // jose caches imported keys per key set, so the set is rebuilt only when the source's
  // answer changes (the issuer's keyring hands out the same array while its cache holds).
  let lastKeys: readonly JWK[] | undefined;
  let lastSet: JWTVerifyGetKey | undefined;
  const keySetOf = (keys: readonly JWK[]): JWTVerifyGetKey => {
    if (keys !== lastKeys || lastSet === undefined) {
      lastKeys = keys;
      lastSet = createLocalJWKSet({ keys: [...keys] });
    }
    return lastSet;
  };
  return async (header, token) => {
    try {
      return await keySetOf(await source())(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      return keySetOf(await source({ reload: true }))(header, token);
    }
  };
}

function remoteKeyResolver(url: URL, options: RemoteJwksOptions): JWTVerifyGetKey {
  return createRemoteJWKSet(url, {
    // jose's default of 30 s would leave tokens from a freshly rotated key unverifiable for that
    // long; a few seconds still bounds the fetches that tokens with made-up kids can cause.
    cooldownDuration: options.cooldownMs ?? 5_000,
    cacheMaxAge: options.cacheMaxAgeMs ?? 300_000,
    timeoutDuration: options.timeoutMs ?? 5_000,
  });
}

/**
 * Splits key lookup failures in two: no key for this token (the token's fault, unauthenticated)
 * and keys that cannot be had at all (the issuer's or the database's fault, unavailable).
 */
function guardKeyResolution(resolve: JWTVerifyGetKey): JWTVerifyGetKey {
  return async (header, token) => {
    // Our tokens always name their key; without a kid jose would try any key that fits.
    if (typeof header.kid !== "string" || header.kid === "") {
      throw new UnauthenticatedError('access token has no "kid" header');
    }
    try {
      return await resolve(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
        throw error;
      }
      if (error instanceof RegistryError) throw error;
      throw new UnavailableError("the token issuer's keys cannot be fetched", { cause: error });
    }
  };
}

function describeRejection(error: unknown): string {
  if (error instanceof errors.JWTExpired) {
    return error.claim === "exp" ? "access token has expired" : "access token is too old";
  }
  if (error instanceof errors.JWTClaimValidationFailed) return describeClaimFailure(error);
  if (error instanceof errors.JOSEAlgNotAllowed) return "access token must be signed with EdDSA";
  if (error instanceof errors.JWSSignatureVerificationFailed) return "access token signature does not verify";
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    return "access token is signed with an unknown key";
  }
  return "access token is malformed";
}

function describeClaimFailure(error: InstanceType<typeof errors.JWTClaimValidationFailed>): string {
  if (error.reason === "missing") return `access token lacks the "${error.claim}" claim`;
  switch (error.claim) {
    case "aud":
      return "access token is for another audience";
    case "iss":
      return "access token is from another issuer";
    case "typ":
      return `access token must have the header typ "${ACCESS_TOKEN_TYPE}"`;
    case "iat":
    case "nbf":
      return "access token is not valid yet";
    default:
      return `access token has an invalid "${error.claim}" claim`;
  }
}
