import type { JWK } from "jose";
import type { Knex } from "knex";
import type { AuthRepository, IssuerKeyRecord, RootTokenRecord } from "../auth/auth-repository.js";
import { translateDriverErrors } from "./driver-errors.js";
import { preparedQuery } from "./prepared-query.js";

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
const ROOT_TOKEN_COLUMNS = ["id", "subject_did", "scopes", "description", "created_at", "revoked_at"] as const;
const ROOT_TOKEN_BY_ID_SQL = `select ${ROOT_TOKEN_COLUMNS.join(", ")} from root_tokens where id = $1`;

interface IssuerKeyRow {
  kid: string;
  public_jwk: JWK;
  private_jwk: JWK;
  created_at: Date;
  retired_at: Date | null;
}

/** The token issuer's state in the `root_tokens` and `issuer_keys` tables (migration 0002). */
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

    // Asked on every authenticated write (is the token's root revoked?): prepared, planned once per connection.
    findRootTokenById: (id) =>
      translateDriverErrors(async () => {
        const [row] = await preparedQuery<RootTokenRow>(knex, "registry_root_token_by_id", ROOT_TOKEN_BY_ID_SQL, [id]);
        return row === undefined ? undefined : rootTokenFromRow(row);
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
        const rows = await knex("issuer_keys").where({ kid }).whereNull("retired_at").update({ retired_at: at }).returning("kid");
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
