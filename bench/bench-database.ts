/** A throwaway Postgres database for one benchmark run, created on the admin URL's server. */
import { randomBytes } from "node:crypto";
import { withAdmin } from "../test/support/test-database.js";

export const DEFAULT_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/test";

export interface BenchDatabase {
  readonly name: string;
  /** The URL of the new database, for DATABASE_URL. */
  readonly url: string;
  /** Drops the database (closing any connection still open to it). Safe to call twice. */
  drop(): Promise<void>;
}

export async function createBenchDatabase(adminUrl = DEFAULT_ADMIN_URL): Promise<BenchDatabase> {
  const name = `registry_bench_${randomBytes(4).toString("hex")}`;
  await withAdmin(adminUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await withAdmin(adminUrl, (client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}

/** The server's version string, for the report. */
export async function serverVersion(adminUrl = DEFAULT_ADMIN_URL): Promise<string> {
  return withAdmin(adminUrl, async (client) => {
    const result = await client.query<{ server_version: string }>("show server_version");
    return result.rows[0]?.server_version ?? "unknown";
  });
}
