import { base64urlnopad } from "@scure/base";

/**
 * Where a client's writes get their bearer token: an access token as is, or a root token that the
 * client exchanges at `POST /v1/tokens` (TokenService.IssueToken) and refreshes before expiry.
 */
export type RegistryAuth = string | RootTokenAuth;

/** A root token the client exchanges for access tokens. */
export interface RootTokenAuth {
  readonly rootToken: string;
  /**
   * The scopes every exchanged token carries, e.g. `["registry.admin"]` for moderation. Unset, the
   * client asks for what each write needs: `registry.publish.<entryType>` of the entry.
   */
  readonly scopes?: readonly string[];
  /** Lifetime asked for each access token, in seconds; the registry's default (900) when unset. */
  readonly ttlSeconds?: number;
}

/** What an exchange returns: the token and when it expires (RFC 3339). */
export interface IssuedToken {
  readonly accessToken: string;
  readonly expiresAt: string;
}

/** The exchange itself: a TokenService.IssueToken call authorised by the root token. */
export type ExchangeRootToken = (rootToken: string, scopes: readonly string[], ttlSeconds: number | undefined) => Promise<IssuedToken>;

/** Bearer tokens for writes, by the scopes a write needs. */
export interface AccessTokens {
  /**
   * The token to send for a write of an entry type, or undefined when the client has no auth.
   * `entryType` is asked only when the scopes depend on it.
   */
  forEntryType(entryType: () => string): Promise<string | undefined>;
}

/** A refresh starts this long before expiry, or a fifth of the lifetime for short-lived tokens. */
const REFRESH_MARGIN_MS = 60_000;

interface HeldToken {
  readonly accessToken: string;
  readonly refreshAt: number;
}

/**
 * Tokens for `auth`. Exchanged tokens are kept per scope set and reused until their refresh time;
 * calls that need the same token share one exchange, and exchanges run one at a time, since the
 * registry rate-limits token requests per address.
 */
export function createAccessTokens(auth: RegistryAuth | undefined, exchange: ExchangeRootToken, clock: () => number): AccessTokens {
  if (auth === undefined || typeof auth === "string") {
    return { forEntryType: async () => auth };
  }
  const held = new Map<string, HeldToken>();
  const pending = new Map<string, Promise<HeldToken>>();
  let lastExchange: Promise<unknown> = Promise.resolve();

  function exchanged(scopes: readonly string[]): Promise<HeldToken> {
    const next = lastExchange
      .catch(() => undefined)
      .then(async () => {
        const startedAt = clock();
        const issued = await exchange((auth as RootTokenAuth).rootToken, scopes, (auth as RootTokenAuth).ttlSeconds);
        const lifetimeMs = tokenLifetimeMs(issued, startedAt);
        const margin = Math.min(REFRESH_MARGIN_MS, lifetimeMs / 5);
        return { accessToken: issued.accessToken, refreshAt: startedAt + lifetimeMs - margin };
      });
    lastExchange = next;
    return next;
  }

  return {
    async forEntryType(entryType) {
      const scopes = auth.scopes ?? [`registry.publish.${entryType()}`];
      const key = scopes.join(" ");
      const current = held.get(key);
      if (current !== undefined && clock() < current.refreshAt) return current.accessToken;
      let inFlight = pending.get(key);
      if (inFlight === undefined) {
        inFlight = exchanged(scopes).finally(() => pending.delete(key));
        pending.set(key, inFlight);
      }
      const fresh = await inFlight;
      held.set(key, fresh);
      return fresh.accessToken;
    },
  };
}

/**
 * The token's lifetime from its own `exp - iat`, measured from when the exchange started on the
 * local clock, so a client whose clock is off from the registry's still refreshes in time. Falls
 * back to `expiresAt` read on the local clock if the token is not a readable JWT.
 */
function tokenLifetimeMs(issued: IssuedToken, startedAt: number): number {
  const claims = jwtClaims(issued.accessToken);
  if (typeof claims?.exp === "number" && typeof claims.iat === "number" && claims.exp > claims.iat) {
    return (claims.exp - claims.iat) * 1000;
  }
  return Math.max(0, Date.parse(issued.expiresAt) - startedAt);
}

function jwtClaims(token: string): { exp?: unknown; iat?: unknown } | undefined {
  const payload = token.split(".")[1];
  if (payload === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(new TextDecoder().decode(base64urlnopad.decode(payload)));
    return typeof claims === "object" && claims !== null ? claims : undefined;
  } catch {
    return undefined;
  }
}
