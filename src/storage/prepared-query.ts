import { randomUUID } from "node:crypto";
import type { Knex } from "knex";

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * Runs a statement as a named prepared statement on a connection of knex's pool: each connection
 * parses and plans it once, and the per-call work is binding values. For the few hot statements
 * whose text never changes (knex's query builder re-renders and Postgres re-parses each time).
 *
 * The statement goes around knex's query runner, so it announces itself the way the runner does
 * (`query`, then `query-response` or `query-error`, with a `__knexQueryUid`) to whoever listens on
 * the knex instance (query tracing); nothing is made for that when no one does.
 */
export async function preparedQuery<T>(knex: Knex, name: string, text: string, values: unknown[]): Promise<T[]> {
  const client = knex.client as {
    acquireConnection(): Promise<PgConnection>;
    releaseConnection(connection: PgConnection): Promise<void>;
  };
  const connection = await client.acquireConnection();
  const event =
    knex.listenerCount("query") === 0 ? undefined : { __knexQueryUid: randomUUID(), method: "raw", sql: text, bindings: values };
  try {
    if (event !== undefined) knex.emit("query", event);
    const result = await connection.query({ name, text, values });
    if (event !== undefined) knex.emit("query-response", result.rows, event);
    return result.rows as T[];
  } catch (error) {
    if (event !== undefined) knex.emit("query-error", error, event);
    throw error;
  } finally {
    await client.releaseConnection(connection);
  }
}
