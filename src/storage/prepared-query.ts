import type { Knex } from "knex";

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * Runs a statement as a named prepared statement on a connection of knex's pool: each connection
 * parses and plans it once, and the per-call work is binding values. For the few hot statements
 * whose text never changes (knex's query builder re-renders and Postgres re-parses each time).
 */
export async function preparedQuery<T>(knex: Knex, name: string, text: string, values: unknown[]): Promise<T[]> {
  const client = knex.client as {
    acquireConnection(): Promise<PgConnection>;
    releaseConnection(connection: PgConnection): Promise<void>;
  };
  const connection = await client.acquireConnection();
  try {
    return (await connection.query({ name, text, values })).rows as T[];
  } finally {
    await client.releaseConnection(connection);
  }
}
