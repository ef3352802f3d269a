import { randomBytes } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { openDatabase, type Database } from "../../src/storage/database.js";
import { seededDataDirectory, usesPostgres, withAdmin } from "../support/test-database.js";

/**
 * A fresh database that holds an old release's dump and nothing else, not yet migrated: a new
 * database on the server in DATABASE_URL, or else an embedded one, as the rest of the suite runs.
 */
export interface RestoredDatabase {
  readonly database: Database;
  drop(): Promise<void>;
}

export async function restoreDump(sql: string): Promise<RestoredDatabase> {
  return usesPostgres() ? restoreOnPostgres(process.env.DATABASE_URL!, sql) : restoreOnPglite(sql);
}

async function restoreOnPostgres(serverUrl: string, sql: string): Promise<RestoredDatabase> {
  const name = `registry_upgrade_${randomBytes(6).toString("hex")}`;
  // template0, as pg_dump's documentation asks: nothing a server's template1 may hold collides with the dump.
  await withAdmin(serverUrl, (client) => client.query(`create database ${name} template template0`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const drop = async () => {
    await withAdmin(serverUrl, (client) => client.query(`drop database if exists ${name} with (force)`));
  };
  try {
    // One connection of its own: the dump's session settings (an empty search_path) end with it.
    await withAdmin(url.toString(), (client) => client.query(sql));
    const database = await openDatabase({ databaseUrl: url.toString(), dataDir: "" });
    return { database, drop: async () => database.close().then(drop) };
  } catch (error) {
    await drop();
    throw error;
  }
}

/** Every schema a dump may have made: the run's template has the current build's, which must go. */
const EMPTY_EVERY_SCHEMA = `
  do $$ declare schema_name text; begin
    for schema_name in select nspname from pg_namespace where nspname !~ '^pg_' and nspname <> 'information_schema' loop
      execute format('drop schema %I cascade', schema_name);
    end loop;
    create schema public;
  end $$;`;

async function restoreOnPglite(sql: string): Promise<RestoredDatabase> {
  // A copy of the run's migrated template opens in a fraction of initdb's seconds; emptied, it is
  // as fresh as a new cluster.
  const directory = await seededDataDirectory("registry-upgrade-");
  try {
    const pglite = await PGlite.create(directory.path, { extensions: { pg_trgm } });
    try {
      await pglite.exec(EMPTY_EVERY_SCHEMA);
      await pglite.exec(sql);
    } finally {
      // Closed, so the dump's session settings end with it, and the server opens the directory as it always does.
      await pglite.close();
    }
    const database = await openDatabase({ dataDir: directory.path });
    return {
      database,
      async drop() {
        await database.close();
        await directory.remove();
      },
    };
  } catch (error) {
    await directory.remove();
    throw error;
  }
}
