import type { JWK } from "jose";

/** A root token as stored: everything but the token itself, of which only a hash is kept. */
export interface RootTokenRecord {
  readonly id: string;
  /** The DID every access token issued with this root token is bound to. */
  readonly subject: string;
  /** The scopes this root token may grant. */
  readonly scopes: readonly string[];
  readonly description: string;
  readonly createdAt: Date;
  readonly revokedAt: Date | null;
}

export interface NewRootToken {
  readonly id: string;
  /** SHA-256 of the token (see hashRootToken). */
  readonly tokenHash: Buffer;
  readonly subject: string;
  readonly scopes: readonly string[];
  readonly description: string;
}

/** An Ed25519 key of the token issuer. The current key signs; retired keys only verify. */
export interface IssuerKeyRecord {
  readonly kid: string;
  readonly publicJwk: JWK;
  readonly privateJwk: JWK;
  readonly createdAt: Date;
  readonly retiredAt: Date | null;
}

export interface NewIssuerKey {
  readonly kid: string;
  readonly publicJwk: JWK;
  readonly privateJwk: JWK;
  readonly createdAt: Date;
}

/** The token issuer's persistent state. */
export interface AuthRepository {
  createRootToken(token: NewRootToken): Promise<RootTokenRecord>;
  /** The unrevoked root token with this hash, if any. */
  findActiveRootTokenByHash(tokenHash: Buffer): Promise<RootTokenRecord | undefined>;
  /** The root token with this id, revoked or not, if any. */
  findRootTokenById(id: string): Promise<RootTokenRecord | undefined>;
  /** Every root token, revoked ones included, oldest first. */
  listRootTokens(): Promise<RootTokenRecord[]>;
  /**
   * Revokes a root token; revoking again keeps the first revocation time. Resolves to whether a
   * root token with this id exists.
   */
  revokeRootToken(id: string, at?: Date): Promise<boolean>;

  /**
   * The current key (if any) first, then the keys retired after `retiredAfter`, most recently
   * retired first: newest first, since a key is retired when its successor becomes current.
   */
  listIssuerKeys(options: { retiredAfter: Date }): Promise<IssuerKeyRecord[]>;
  /**
   * Stores `key` as the current key unless there already is one (possibly inserted by another
   * process a moment ago). Resolves to whether `key` became current.
   */
  insertIssuerKey(key: NewIssuerKey): Promise<boolean>;
  /** Retires `kid` if it is still current. Resolves to whether this call retired it. */
  retireKey(kid: string, at: Date): Promise<boolean>;
}
