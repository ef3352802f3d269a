import knexFactory, { type Knex } from "knex";
import type { PGlite } from "@electric-sql/pglite";
import type pg from "pg";
import { ensurePrivateDataDirectory, makeDataDirectoryContentsPrivate } from "./data-directory.js";
import { lockDataDirectory, type StaleLockReport } from "./data-directory-lock.js";
import { migrationSource } from "./migrations/index.js";

export { DatabaseInUseError } from "./data-directory-lock.js";

export interface DatabaseOptions {
  /** A postgres:// URL; when absent the embedded PGlite database in `dataDir` is used. */
  readonly databaseUrl?: string;
  /** Directory of the embedded database, or "memory://" for one that lives in memory. */
  readonly dataDir: string;
  /** Most connections to keep open to Postgres (PGlite always has exactly one). */
  readonly poolMax?: number;
  /** Every statement is cancelled after this long, so no query can hold a connection forever. */
  readonly statementTimeoutMs?: number;
  /** Longest wait to open a Postgres connection (TCP, TLS and startup), as the pool or a listener. */
  readonly databaseConnectTimeoutMs?: number;
  /** Longest wait for a pooled connection, including opening one. */
  readonly databaseAcquireTimeoutMs?: number;
  /**
   * Longest wait for the answer to a query sent to Postgres. It backs up the server's
   * statement_timeout for the case the server cannot even send the cancellation (a partition),
   * so it should exceed every statement timeout in use.
   */
  readonly databaseQueryTimeoutMs?: number;
  /**
   * How the pool's connections name themselves to Postgres (pg_stat_activity), so an operator can
   * tell the primary's pool from a read replica's. Default "registry".
   */
  readonly applicationName?: string;
  /**
   * Where knex's own messages go (a failed connection attempt, for one). Its default is the
   * console, whose unstructured lines would break a JSON log; every failure it reports also
   * reaches the caller as an error, so the server keeps them at debug level.
   */
  readonly driverLog?: (level: "warn" | "error" | "debug" | "deprecate", message: string) => void;
  /** Told when the embedded database's directory was locked by a process that no longer holds it. */
  readonly onStaleLock?: StaleLockReport;
}

/** Defaults that bound a request to an unreachable Postgres to a few seconds. */
export const DATABASE_TIMEOUT_DEFAULTS = { connectMs: 2_000, acquireMs: 3_000, queryMs: 6_000 } as const;

/**
 * Idle time before TCP keepalive probes start on a Postgres connection. Without it a connection
 * whose peer vanished (a partition, a failed-over host) looks open until the first write times out.
 */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

/** How a `pg` client reaches Postgres: shared by the pool and the change feed's listener. */
export function postgresClientSettings(databaseUrl: string, options: { connectTimeoutMs?: number; applicationName: string }) {
  return {
    connectionString: databaseUrl,
    application_name: options.applicationName,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DATABASE_TIMEOUT_DEFAULTS.connectMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
  };
}

/** An open database: Postgres through `pg`, or PGlite in-process through the same `pg` client. */
export interface Database {
  readonly knex: Knex;
  readonly kind: "postgres" | "pglite";
  /** The postgres:// URL it was opened with; undefined for PGlite. */
  readonly url: string | undefined;
  /** Resolves when a trivial query succeeds within `timeoutMs`; rejects otherwise. */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const statementTimeout = options.statementTimeoutMs ?? 5_000;
  if (options.databaseUrl !== undefined && options.databaseUrl !== "") {
    const closeOnReadTimeout = readTimeoutCloser();
    const knex = knexFactory({
      client: "pg",
      connection: {
        ...postgresClientSettings(options.databaseUrl, {
          connectTimeoutMs: options.databaseConnectTimeoutMs,
          applicationName: options.applicationName ?? "registry",
        }),
        statement_timeout: statementTimeout,
        query_timeout: options.databaseQueryTimeoutMs ?? DATABASE_TIMEOUT_DEFAULTS.queryMs,
      },
      acquireConnectionTimeout: options.databaseAcquireTimeoutMs ?? DATABASE_TIMEOUT_DEFAULTS.acquireMs,
      ...(options.driverLog === undefined ? {} : { log: knexLog(options.driverLog) }),
      pool: { min: 0, max: options.poolMax ?? 16, validate: isIdle, afterCreate: closeOnReadTimeout.track },
    });
    knex.on("query-error", closeOnReadTimeout.onQueryError);
    return wrap(knex, "postgres", options.databaseUrl, async () => knex.destroy());
  }
  return openPglite(options.dataDir, statementTimeout, options.onStaleLock);
}

function knexLog(write: NonNullable<DatabaseOptions["driverLog"]>): Knex.Config["log"] {
  const text = (message: unknown) => (typeof message === "string" ? message : String(message));
  return {
    warn: (message) => write("warn", text(message)),
    error: (message) => write("error", text(message)),
    debug: (message) => write("debug", text(message)),
    deprecate: (method, alternative) => write("deprecate", `${method} is deprecated; use ${alternative}`),
  };
}

async function openPglite(dataDir: string, statementTimeout: number, onStaleLock?: StaleLockReport): Promise<Database> {
  // Loaded lazily so deployments on Postgres never load the WASM build.
  const { PGlite } = await import("@electric-sql/pglite");
  const { createPgConfig } = await import("@electric-sql/pglite/node-postgres");
  // Trigram indexes serve discovery's substring search (migration 0004).
  const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm");
  const inMemory = dataDir.startsWith("memory://");
  const releaseLock = inMemory ? async () => {} : await lockDataDir(dataDir, onStaleLock);
  const create = () => PGlite.create(dataDir, { extensions: { pg_trgm } });
  const pglite = await (inMemory ? create() : withPrivateFiles(dataDir, create)).catch(async (error: unknown) => {
    await releaseLock();
    throw error;
  });
  await pglite.exec(`SET statement_timeout = ${Math.trunc(statementTimeout)}`);
  const knex = knexFactory({
    client: "pg",
    // A function, because knex deep-clones plain connection objects and the adapter's
    // connection carries private state.
    connection: () => createPgConfig(pglite) as unknown as Knex.PgConnectionConfig,
    pool: { min: 0, max: 1 },
  });
  return wrap(knex, "pglite", undefined, async () => {
    await knex.destroy();
    await pglite.close();
    await releaseLock();
  });
}

/**
 * PGlite on `dataDir` with nothing in it readable by another account: before it opens (files
 * left by an older build or another tool) and after (initdb's files, which PGlite makes 0666).
 * Files it adds later are private to the directory, whose mode is 0700.
 */
async function withPrivateFiles(dataDir: string, create: () => Promise<PGlite>): Promise<PGlite> {
  await makeDataDirectoryContentsPrivate(dataDir);
  const pglite = await create();
  try {
    await makeDataDirectoryContentsPrivate(dataDir);
  } catch (error) {
    await pglite.close();
    throw error;
  }
  return pglite;
}

/** The embedded database's directory, made private and locked to this process (data-directory-lock.ts). */
async function lockDataDir(dataDir: string, onStaleLock?: StaleLockReport): Promise<() => Promise<void>> {
  await ensurePrivateDataDirectory(dataDir);
  return lockDataDirectory(dataDir, onStaleLock);
}

function wrap(knex: Knex, kind: Database["kind"], url: string | undefined, close: () => Promise<void>): Database {
  return {
    knex,
    kind,
    url,
    async ping(timeoutMs = DATABASE_TIMEOUT_DEFAULTS.acquireMs + DATABASE_TIMEOUT_DEFAULTS.queryMs) {
      await withTimeout(knex.raw("select 1"), timeoutMs, "the database did not answer a ping in time");
    },
    close,
  };
}

/**
 * A query whose answer timed out is still running as far as `pg` knows, and its connection would
 * answer the next query only after the lost answer arrives. The pool hands out only connections
 * ready for a query, and closes the others.
 */
function isIdle(connection: { readyForQuery?: boolean }): boolean {
  return connection.readyForQuery === true;
}

type PooledClient = pg.Client & { __knexUid?: string };

/**
 * Closes a connection as soon as one of its queries times out waiting for an answer. Inside a
 * transaction knex would otherwise send ROLLBACK on it, which waits behind the lost answer for a
 * second full timeout; closed, the ROLLBACK fails at once and the request gets its answer within
 * one query timeout. The pool learns that a connection is gone from its "end" event.
 */
function readTimeoutCloser() {
  const clients = new Map<string, PooledClient>();
  return {
    track(client: PooledClient, done: (error: Error | null, client: PooledClient) => void): void {
      const uid = client.__knexUid;
      if (uid !== undefined) {
        clients.set(uid, client);
        client.once("end", () => clients.delete(uid));
      }
      done(null, client);
    },
    onQueryError(error: unknown, query: { __knexUid?: string }): void {
      if (!(error instanceof Error) || !error.message.endsWith(PG_READ_TIMEOUT_MESSAGE)) return;
      const client = query.__knexUid === undefined ? undefined : clients.get(query.__knexUid);
      // With a query still in flight, end() destroys the socket rather than waiting on it.
      client?.end().catch(() => {});
    },
  };
}

/** The message of the error `pg` raises when `query_timeout` expires (knex prefixes the SQL). */
const PG_READ_TIMEOUT_MESSAGE = "Query read timeout";

/** `work`, or a rejection after `timeoutMs`; a late outcome of `work` is ignored. */
async function withTimeout<T>(work: PromiseLike<T>, timeoutMs: number, message: string): Promise<T> {
  const pending = Promise.resolve(work);
  pending.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), timeoutMs);
  });
  try {
    return await Promise.race([pending, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Brings the schema up to date. Safe to run from several processes at once (knex takes a lock).
 * Migrations applied by a newer build are not an error: during a rolling upgrade, or a rollback,
 * this build still starts on the schema the newer one left (migrations are written to allow it).
 */
export async function migrateToLatest(database: Database): Promise<string[]> {
  const [, applied] = (await database.knex.migrate.latest({ migrationSource, disableMigrationsListValidation: true })) as [
    number,
    string[],
  ];
  return applied;
}

/** knex's record of applied migrations. */
const MIGRATIONS_TABLE = "knex_migrations";

/**
 * The migrations this build has that the database has not applied, oldest first. It only reads:
 * unlike knex's migrate.list it creates no bookkeeping table, so it suits a database user that
 * may not change the schema.
 */
export async function pendingMigrations(database: Database): Promise<string[]> {
  const known = (await migrationSource.getMigrations([])).map((migration) => migrationSource.getMigrationName(migration));
  if (!(await database.knex.schema.hasTable(MIGRATIONS_TABLE))) return known;
  const rows = await database.knex(MIGRATIONS_TABLE).select<Array<{ name: string }>>("name");
  const applied = new Set(rows.map((row) => row.name));
  return known.filter((name) => !applied.has(name));
}
