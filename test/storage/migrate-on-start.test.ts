import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRegistry } from "../../src/app.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { migrateToLatest, openDatabase, type Database } from "../../src/storage/database.js";
import { childEnv, freePort, runCli, startServerProcess, temporaryDirectory } from "../support/child-processes.js";
import { usesPostgres, withAdmin } from "../support/test-database.js";

/**
 * MIGRATE_ON_START=false, for deployments that forbid schema changes at start: the server only
 * checks the schema, and `registry migrate` is the separate step that changes it.
 */

const logger = createLogger(() => {});
const STARTUP_MS = 120_000;
/** Opening an empty PGlite directory runs initdb (about 8 s here); on Postgres it takes about 2 s. */
const REFUSAL_MS = 30_000;

interface EmptyDatabase {
  readonly database: Database;
  /** For child processes: a postgres:// URL, or nothing on PGlite (which is one process's). */
  readonly url: string | undefined;
  drop(): Promise<void>;
}

/** A database no migration has touched: a fresh Postgres database, or a new in-memory PGlite. */
async function createEmptyDatabase(): Promise<EmptyDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (!usesPostgres() || serverUrl === undefined) {
    const database = await openDatabase({ dataDir: "memory://" });
    return { database, url: undefined, drop: () => database.close() };
  }
  const name = `registry_test_${randomBytes(6).toString("hex")}`;
  await withAdmin(serverUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: "" });
  return {
    database,
    url: url.toString(),
    async drop() {
      await database.close();
      await withAdmin(serverUrl, (client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}

const configWith = (env: Record<string, string>) => loadConfig(env, { port: 0, host: "127.0.0.1", rateLimitRps: 0 });

async function readyz(url: string): Promise<number> {
  const response = await fetch(`${url}/readyz`);
  await response.arrayBuffer();
  return response.status;
}

describe("MIGRATE_ON_START", () => {
  it("is true unless set, and takes only true/false (or 1/0)", () => {
    expect(loadConfig({}).migrateOnStart).toBe(true);
    expect(loadConfig({ MIGRATE_ON_START: "false" }).migrateOnStart).toBe(false);
    expect(loadConfig({ MIGRATE_ON_START: "0" }).migrateOnStart).toBe(false);
    expect(loadConfig({ MIGRATE_ON_START: "true" }).migrateOnStart).toBe(true);
    expect(() => loadConfig({ MIGRATE_ON_START: "no" })).toThrow(/MIGRATE_ON_START must be true or false/);
  });

  describe("in process, on a database never migrated", () => {
    let empty: EmptyDatabase;
    beforeAll(async () => {
      empty = await createEmptyDatabase();
    });
    afterAll(async () => {
      await empty?.drop();
    });

    it("refuses to start when false, naming what is missing and `registry migrate`, and changes nothing", async () => {
      const failure = await startRegistry(configWith({ MIGRATE_ON_START: "false" }), { logger, database: empty.database }).then(
        async (running) => {
          await running.close();
          return undefined;
        },
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ConfigError);
      expect((failure as Error).message).toMatch(/schema is behind/);
      expect((failure as Error).message).toMatch(/0001-entries/);
      expect((failure as Error).message).toMatch(/`registry migrate`/);
      // Not even knex's bookkeeping table: a database user without DDL rights gets this message too.
      expect(await empty.database.knex.schema.hasTable("knex_migrations")).toBe(false);
      expect(await empty.database.knex.schema.hasTable("entries")).toBe(false);
    });

    it("starts when false once the schema is current, and a build older than the schema starts either way", async () => {
      await migrateToLatest(empty.database);
      const current = await startRegistry(configWith({ MIGRATE_ON_START: "false" }), { logger, database: empty.database });
      expect(await readyz(current.url)).toBe(200);
      await current.close();

      // A newer build has applied a migration this one does not know (a rolling upgrade, or a rollback).
      await empty.database.knex("knex_migrations").insert({ name: "9999-from-a-newer-build", batch: 99, migration_time: new Date() });
      for (const migrateOnStart of ["false", "true"]) {
        const older = await startRegistry(configWith({ MIGRATE_ON_START: migrateOnStart }), { logger, database: empty.database });
        expect(await readyz(older.url)).toBe(200);
        await older.close();
      }
    });
  });

  describe("as an operator runs it", () => {
    let empty: EmptyDatabase | undefined;
    let directory: { path: string; remove(): Promise<void> } | undefined;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      if (usesPostgres()) {
        empty = await createEmptyDatabase();
        env = childEnv({ DATABASE_URL: empty.url, MIGRATE_ON_START: "false" });
      } else {
        directory = await temporaryDirectory("registry-migrate-");
        env = childEnv({ REGISTRY_DATA_DIR: directory.path, MIGRATE_ON_START: "false" });
      }
    });
    afterAll(async () => {
      await empty?.drop();
      await directory?.remove();
    });

    it(
      "`registry serve` exits with the error, `registry migrate` applies the migrations, then serve starts",
      async () => {
        // It must also exit promptly, not linger on an open pool.
        const refused = await runCli(["serve"], { ...env, PORT: String(await freePort()) }, REFUSAL_MS);
        expect(refused.code, refused.stderr).toBe(2);
        expect(refused.stderr).toMatch(/^registry: the database schema is behind .*MIGRATE_ON_START is false; run `registry migrate`/m);

        const migrated = await runCli(["migrate"], env);
        expect(migrated.code, migrated.stderr).toBe(0);
        expect(migrated.stdout).toMatch(/^applied: 0001-entries, /);

        const server = await startServerProcess([], await freePort(), env, STARTUP_MS);
        try {
          expect(await readyz(server.url)).toBe(200);
        } finally {
          expect((await server.stop()).code).toBe(0);
        }
      },
      2 * STARTUP_MS,
    );
  });
});
