import { randomBytes } from "node:crypto";
import { cp } from "node:fs/promises";
import pg from "pg";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { scratchDirectory } from "./scratch-directories.js";

/** A migrated database made once per run (database-template.ts), for each test file to copy. */
export type DatabaseTemplate = { readonly kind: "pglite"; readonly dataDir: string } | { readonly kind: "postgres"; readonly name: string };

declare module "vitest" {
  export interface ProvidedContext {
    databaseTemplate: DatabaseTemplate;
  }
}

/**
 * A real database for one test file: a fresh Postgres database on the server in DATABASE_URL
 * (created here, dropped afterwards), or else an embedded PGlite database of its own. Both start
 * as copies of the run's migrated template when the lane made one.
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
    if ((await databaseTemplate())?.kind !== "pglite") {
      const database = await openDatabase({ dataDir: "memory://" });
      await migrateToLatest(database);
      return { database, url: undefined, drop: () => database.close() };
    }
    const dataDir = await seededDataDirectory("registry-test-");
    const database = await openDatabase({ dataDir: dataDir.path });
    await migrateToLatest(database);
    return {
      database,
      url: undefined,
      async drop() {
        await database.close();
        await dataDir.remove();
      },
    };
  }
  const name = `registry_test_${randomBytes(6).toString("hex")}`;
  const template = await databaseTemplate();
  const copyOf = template?.kind === "postgres" ? ` template ${template.name}` : "";
  await withAdmin(serverUrl, (client) => client.query(`create database ${name}${copyOf}`));
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

/**
 * A new directory for an embedded database (a test's own, or a child process's REGISTRY_DATA_DIR):
 * a copy of the run's migrated template when the lane made one, so nothing runs initdb; else empty.
 */
export async function seededDataDirectory(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const directory = await scratchDirectory(prefix);
  const template = await databaseTemplate();
  if (template?.kind === "pglite") await cp(template.dataDir, directory.path, { recursive: true });
  return directory;
}

/** The run's template, provided by the lane's global setup; undefined outside vitest or without one. */
async function databaseTemplate(): Promise<DatabaseTemplate | undefined> {
  try {
    const { inject } = await import("vitest");
    return inject("databaseTemplate");
  } catch {
    return undefined;
  }
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
