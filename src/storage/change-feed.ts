import pg from "pg";
import { postgresClientSettings } from "./database.js";
import type { ChangeFeed, ChangeListener } from "./entry-cache.js";

/** The channel every write notifies, with the changed entry DID (without version) as payload. */
// Also named in registry_create_entry (migration 0003), which notifies from inside the database.
export const ENTRY_CHANGES_CHANNEL = "registry_entry_changes";

/**
 * For a database only this process writes (embedded PGlite): the cache's own invalidation on
 * each write is complete, so the feed is always live and never reports anything.
 */
export function createLocalChangeFeed(): ChangeFeed & { close(): Promise<void> } {
  return { live: true, subscribe() {}, close: async () => {} };
}

export interface PostgresChangeFeedOptions {
  readonly databaseUrl: string;
  /** Longest wait to open the listening connection. */
  readonly connectTimeoutMs?: number;
  /**
   * How often the listening connection is checked with a query, and how long that query may take
   * before the connection is declared dead. A partition sends no error, so without this check a
   * dead connection would look live, and the cache would serve what it holds for its whole TTL.
   */
  readonly heartbeatMs?: number;
  /** Longest wait between reconnection attempts. */
  readonly maxBackoffMs?: number;
  readonly onError?: (error: unknown) => void;
}

class ChangeFeedHeartbeatError extends Error {}

/**
 * Changes committed by any process on a Postgres database, through LISTEN on one dedicated
 * connection. NOTIFY is transactional, so a change arrives only once it is visible. While the
 * connection is down the feed is not live (callers stop caching), and every reconnection is a
 * reset, since notifications sent meanwhile are lost. A connection that stops answering the
 * heartbeat counts as down.
 */
export async function createPostgresChangeFeed(options: PostgresChangeFeedOptions): Promise<ChangeFeed & { close(): Promise<void> }> {
  const listeners: ChangeListener[] = [];
  const maxBackoffMs = options.maxBackoffMs ?? 5_000;
  const heartbeatMs = options.heartbeatMs ?? 2_000;
  /** The connection being opened or listening; events from any other are stale. */
  let client: pg.Client | undefined;
  let live = false;
  let closed = false;
  let backoffMs = 100;
  let retry: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;

  const reset = () => {
    for (const listener of listeners) listener.onReset();
  };

  async function connect(): Promise<void> {
    const next = new pg.Client({
      ...postgresClientSettings(options.databaseUrl, {
        connectTimeoutMs: options.connectTimeoutMs,
        applicationName: "registry-changes",
      }),
      query_timeout: heartbeatMs,
    });
    client = next;
    next.on("notification", (message) => {
      if (message.channel !== ENTRY_CHANGES_CHANNEL || message.payload === undefined) return;
      for (const listener of listeners) listener.onChange(message.payload);
    });
    next.on("error", (error) => lost(next, error));
    next.on("end", () => lost(next, new Error("change feed connection ended")));
    try {
      await next.connect();
      await next.query(`LISTEN ${ENTRY_CHANGES_CHANNEL}`);
    } catch (error) {
      lost(next, error);
      return;
    }
    if (client !== next) return;
    backoffMs = 100;
    reset();
    live = true;
    heartbeat = setInterval(checkEvery(next), heartbeatMs);
    heartbeat.unref();
  }

  /** A heartbeat for one connection: a query it must answer within the client's query_timeout. */
  function checkEvery(which: pg.Client): () => void {
    let checking = false;
    return () => {
      // A check still waiting fails by its own timeout; a second one would prove nothing more.
      if (checking) return;
      checking = true;
      which
        .query("select 1")
        .catch((error: unknown) => {
          lost(
            which,
            new ChangeFeedHeartbeatError(`the change feed's connection did not answer within ${heartbeatMs} ms`, { cause: error }),
          );
        })
        .finally(() => (checking = false));
    };
  }

  function lost(which: pg.Client, error: unknown): void {
    if (client !== which) return;
    client = undefined;
    clearInterval(heartbeat);
    heartbeat = undefined;
    live = false;
    reset();
    // With a query in flight (a heartbeat that timed out), end() destroys the socket.
    which.end().catch(() => {});
    if (closed) return;
    options.onError?.(error);
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, backoffMs);
    retry.unref();
    backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
  }

  await connect();
  return {
    get live() {
      return live;
    },
    subscribe(listener) {
      listeners.push(listener);
    },
    async close() {
      closed = true;
      live = false;
      clearTimeout(retry);
      clearInterval(heartbeat);
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}
