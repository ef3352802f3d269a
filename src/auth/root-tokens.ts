import { createHash, randomBytes } from "node:crypto";
import { ADMIN_SCOPE, PUBLISH_SCOPE_PREFIX } from "./principal.js";

/**
 * Root tokens: long-lived secrets an operator hands to a publisher, exchanged for short-lived
 * access tokens. Only their SHA-256 hash is stored, so a database leak does not leak them.
 */

/** A fixed prefix lets secret scanners (and people) recognise a leaked root token. */
export const ROOT_TOKEN_PREFIX = "regrt_";
const ROOT_TOKEN_BYTES = 32;
/** 32 random bytes are 43 base64url characters without padding. */
const ROOT_TOKEN_PATTERN = /^regrt_[A-Za-z0-9_-]{43}$/;

export const ROOT_TOKEN_ID_PREFIX = "rt_";
const ROOT_TOKEN_ID_PATTERN = /^rt_[0-9a-f]{16}$/;

/** `registry.publish.*`: lets its holder publish every entry type. */
export const PUBLISH_ANY_SCOPE = `${PUBLISH_SCOPE_PREFIX}*`;

/** A new root token: 256 random bits, base64url, behind a scanner-friendly prefix. */
export function generateRootToken(): string {
  return ROOT_TOKEN_PREFIX + randomBytes(ROOT_TOKEN_BYTES).toString("base64url");
}

/** A short, non-secret handle for listing and revoking a root token. */
export function generateRootTokenId(): string {
  return ROOT_TOKEN_ID_PREFIX + randomBytes(8).toString("hex");
}

export function looksLikeRootToken(text: string): boolean {
  return ROOT_TOKEN_PATTERN.test(text);
}

export function isRootTokenId(text: string): boolean {
  return ROOT_TOKEN_ID_PATTERN.test(text);
}

/** The form a root token is stored and looked up in. */
export function hashRootToken(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/** Every scope this registry knows, given its configured entry types. */
export function knownScopes(entryTypes: readonly string[]): string[] {
  return [...entryTypes.map((type) => PUBLISH_SCOPE_PREFIX + type), PUBLISH_ANY_SCOPE, ADMIN_SCOPE];
}

export function isKnownScope(scope: string, entryTypes: readonly string[]): boolean {
  if (scope === ADMIN_SCOPE || scope === PUBLISH_ANY_SCOPE) return true;
  return scope.startsWith(PUBLISH_SCOPE_PREFIX) && entryTypes.includes(scope.slice(PUBLISH_SCOPE_PREFIX.length));
}

/**
 * Whether a root token holding `grantable` may hand out `scope`. Holding `registry.publish.*`
 * covers every publish scope; `registry.admin` is only ever granted by itself.
 */
export function canGrantScope(grantable: readonly string[], scope: string): boolean {
  if (grantable.includes(scope)) return true;
  return scope.startsWith(PUBLISH_SCOPE_PREFIX) && grantable.includes(PUBLISH_ANY_SCOPE);
}

/** Why `scope` is not known, in words for the person who typed it. */
export function unknownScopeMessage(scope: string, entryTypes: readonly string[]): string {
  const shown = scope.length > 80 ? `${scope.slice(0, 80)}...` : scope;
  return `unknown scope ${JSON.stringify(shown)}: expected one of ${knownScopes(entryTypes).join(", ")}`;
}
