import pg from "pg";
import type { ChangeFeed } from "./entry-cache.js";

/** The channel every write notifies, with the changed entry DID (without version) as payload. */
// Also named in registry_create_entry (migration 0003), which notifies from inside the database.
export const ENTRY_CHANGES_CHANNEL = "registry_entry_changes";

type Listener = Parameters<ChangeFeed["subscribe"]>[0];

/**
 * For a database only this process writes (embedded PGlite): the cache's own invalidation on
 * each write is complete, so the feed is always live and never reports anything.
 */
export function createLocalChangeFeed(): ChangeFeed & { close(): Promise<void> } {
  return { live: true, subscribe() {}, close: async () => {} };
}

export interface PostgresChangeFeedOptions {
  readonly databaseUrl: string;
  /** Longest wait between reconnection attempts. */
  readonly maxBackoffMs?: number;
  readonly onError?: (error: unknown) => void;
}

/**
 * Changes committed by any process on a Postgres database, through LISTEN on one dedicated
 * connection. NOTIFY is transactional, so a change arrives only once it is visible. While the
 * connection is down the feed is not live (callers stop caching), and every reconnection is a
 * reset, since notifications sent meanwhile are lost.
 */
export async function createPostgresChangeFeed(
  options: PostgresChangeFeedOptions,
): Promise<ChangeFeed & { close(): Promise<void> }> {
  const listeners: Listener[] = [];
  const maxBackoffMs = options.maxBackoffMs ?? 5_000;
  let client: pg.Client | undefined;
  let live = false;
  let closed = false;
  let backoffMs = 100;
  let retry: NodeJS.Timeout | undefined;

  const reset = () => {
    for (const listener of listeners) listener.onReset();
  };

  async function connect(): Promise<void> {
    const next = new pg.Client({ connectionString: options.databaseUrl, application_name: "registry-changes" });
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
    client = next;
    backoffMs = 100;
    reset();
    live = true;
  }

  function lost(which: pg.Client, error: unknown): void {
    if (client !== undefined && client !== which) return;
    client = undefined;
    live = false;
    reset();
    which.end().catch(() => {});
    if (closed || retry !== undefined) return;
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
      if (retry !== undefined) clearTimeout(retry);
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}
