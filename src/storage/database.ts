import { mkdir, open, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import knexFactory, { type Knex } from "knex";
import { migrationSource } from "./migrations/index.js";

export interface DatabaseOptions {
  /** A postgres:// URL; when absent the embedded PGlite database in `dataDir` is used. */
  readonly databaseUrl?: string;
  /** Directory of the embedded database, or "memory://" for one that lives in memory. */
  readonly dataDir: string;
  /** Most connections to keep open to Postgres (PGlite always has exactly one). */
  readonly poolMax?: number;
  /** Every statement is cancelled after this long, so no query can hold a connection forever. */
  readonly statementTimeoutMs?: number;
}

/** An open database: Postgres through `pg`, or PGlite in-process through the same `pg` client. */
export interface Database {
  readonly knex: Knex;
  readonly kind: "postgres" | "pglite";
  /** The postgres:// URL it was opened with; undefined for PGlite. */
  readonly url: string | undefined;
  /** Resolves when a trivial query succeeds; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const statementTimeout = options.statementTimeoutMs ?? 5_000;
  if (options.databaseUrl !== undefined && options.databaseUrl !== "") {
    const knex = knexFactory({
      client: "pg",
      connection: {
        connectionString: options.databaseUrl,
        statement_timeout: statementTimeout,
        application_name: "registry",
      },
      pool: { min: 0, max: options.poolMax ?? 16 },
    });
    return wrap(knex, "postgres", options.databaseUrl, async () => knex.destroy());
  }
  return openPglite(options.dataDir, statementTimeout);
}

async function openPglite(dataDir: string, statementTimeout: number): Promise<Database> {
  // Loaded lazily so deployments on Postgres never load the WASM build.
  const { PGlite } = await import("@electric-sql/pglite");
  const { createPgConfig } = await import("@electric-sql/pglite/node-postgres");
  // Trigram indexes serve discovery's substring search (migration 0004).
  const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm");
  const inMemory = dataDir.startsWith("memory://");
  const releaseLock = inMemory ? async () => {} : await lockDataDir(dataDir);
  const pglite = await PGlite.create(dataDir, { extensions: { pg_trgm } }).catch(async (error: unknown) => {
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

export class DatabaseInUseError extends Error {}

/**
 * PGlite is one process's database: a second process opening the same directory would corrupt
 * it. A lock file holding the owner's pid turns that into a clear error; a lock left by a process
 * that no longer runs is taken over.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  await mkdir(dataDir, { recursive: true });
  const lockPath = join(dataDir, "registry.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(lockPath, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number((await readFile(lockPath, "utf8").catch(() => "")).trim());
      if (Number.isInteger(owner) && owner > 0 && isRunning(owner)) {
        throw new DatabaseInUseError(
          `the embedded database in ${dataDir} is in use by process ${owner}; stop it first, or point both at a Postgres server with DATABASE_URL`,
        );
      }
      await rm(lockPath, { force: true });
    }
  }
  throw new DatabaseInUseError(`cannot lock the embedded database in ${dataDir}`);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function wrap(knex: Knex, kind: Database["kind"], url: string | undefined, close: () => Promise<void>): Database {
  return {
    knex,
    kind,
    url,
    async ping() {
      await knex.raw("select 1");
    },
    close,
  };
}

/** Brings the schema up to date. Safe to run from several processes at once (knex takes a lock). */
export async function migrateToLatest(database: Database): Promise<string[]> {
  const [, applied] = (await database.knex.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}
