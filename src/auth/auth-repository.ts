import type { JWK } from "jose";
import type { Knex } from "knex";
import { translateDriverErrors } from "../storage/driver-errors.js";

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

interface RootTokenRow {
  id: string;
  token_hash: Buffer;
  subject_did: string;
  scopes: string[];
  description: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** The columns a root token is read with: never the hash, which has no business leaving storage. */
const ROOT_TOKEN_COLUMNS = [
  "id",
  "subject_did",
  "scopes",
  "description",
  "created_at",
  "revoked_at",
] as const;

interface IssuerKeyRow {
  kid: string;
  public_jwk: JWK;
  private_jwk: JWK;
  created_at: Date;
  retired_at: Date | null;
}

export function createKnexAuthRepository(knex: Knex): AuthRepository {
  return {
    createRootToken: (token) =>
      translateDriverErrors(async () => {
        const [row] = await knex<RootTokenRow>("root_tokens")
          .insert({
            id: token.id,
            token_hash: token.tokenHash,
            subject_did: token.subject,
            scopes: [...token.scopes],
            description: token.description,
          })
          .returning(ROOT_TOKEN_COLUMNS);
        return rootTokenFromRow(row as RootTokenRow);
      }),

    findActiveRootTokenByHash: (tokenHash) =>
      translateDriverErrors(async () => {
        const row = await knex<RootTokenRow>("root_tokens")
          .select(...ROOT_TOKEN_COLUMNS)
          .where({ token_hash: tokenHash })
          .whereNull("revoked_at")
          .first();
        return row === undefined ? undefined : rootTokenFromRow(row as RootTokenRow);
      }),

    listRootTokens: () =>
      translateDriverErrors(async () => {
        const rows = await knex<RootTokenRow>("root_tokens")
          .select(...ROOT_TOKEN_COLUMNS)
          .orderBy([{ column: "created_at" }, { column: "id" }]);
        return rows.map((row) => rootTokenFromRow(row as RootTokenRow));
      }),

    revokeRootToken: (id, at = new Date()) =>
      translateDriverErrors(async () => {
        const rows = await knex("root_tokens")
          .where({ id })
          .update({ revoked_at: knex.raw("coalesce(revoked_at, ?)", [at]) })
          .returning("id");
        return rows.length > 0;
      }),

    listIssuerKeys: ({ retiredAfter }) =>
      translateDriverErrors(async () => {
        const rows = await knex<IssuerKeyRow>("issuer_keys")
          .whereNull("retired_at")
          .orWhere("retired_at", ">", retiredAfter)
          .orderByRaw("retired_at desc nulls first, created_at desc");
        return rows.map(issuerKeyFromRow);
      }),

    insertIssuerKey: (key) =>
      translateDriverErrors(async () => {
        // "do nothing" on any conflict, notably the one-current-key index: a concurrent process
        // that created a key first wins, and the caller re-reads.
        const rows = await knex("issuer_keys")
          .insert({
            kid: key.kid,
            public_jwk: JSON.stringify(key.publicJwk),
            private_jwk: JSON.stringify(key.privateJwk),
            created_at: key.createdAt,
          })
          .onConflict()
          .ignore()
          .returning("kid");
        return rows.length > 0;
      }),

    retireKey: (kid, at) =>
      translateDriverErrors(async () => {
        const rows = await knex("issuer_keys")
          .where({ kid })
          .whereNull("retired_at")
          .update({ retired_at: at })
          .returning("kid");
        return rows.length > 0;
      }),
  };
}

function rootTokenFromRow(row: Omit<RootTokenRow, "token_hash">): RootTokenRecord {
  return {
    id: row.id,
    subject: row.subject_did,
    scopes: row.scopes,
    description: row.description,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

function issuerKeyFromRow(row: IssuerKeyRow): IssuerKeyRecord {
  return {
    kid: row.kid,
    publicJwk: row.public_jwk,
    privateJwk: row.private_jwk,
    createdAt: row.created_at,
    retiredAt: row.retired_at,
  };
}
