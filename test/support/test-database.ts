import { randomBytes } from "node:crypto";
import pg from "pg";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";

/**
 * A real database for one test file: a fresh Postgres database on the server in DATABASE_URL
 * (created here, dropped afterwards), or else an in-memory PGlite instance.
 */
export interface TestDatabase {
  readonly database: Database;
  /** The postgres:// URL of the fresh database, for child processes; undefined on PGlite. */
  readonly url: string | undefined;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl === undefined || serverUrl === "") {
    const database = await openDatabase({ dataDir: "memory://" });
    await migrateToLatest(database);
    return { database, url: undefined, drop: () => database.close() };
  }
  const name = `registry_test_${randomBytes(6).toString("hex")}`;
  await withAdmin(serverUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: "", poolMax: 40 });
  await migrateToLatest(database);
  return {
    database,
    url: url.toString(),
    async drop() {
      await database.close();
      await withAdmin(serverUrl, (client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}

/** Runs `work` on a one-off connection to the server in `url` (for create/drop database). */
export async function withAdmin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export const usesPostgres = (): boolean => (process.env.DATABASE_URL ?? "") !== "";

/** A Redis server for the tests that need one (REDIS_URL, as CI sets it); those skip without it. */
export const testRedisUrl = (): string | undefined => process.env.REDIS_URL || undefined;
