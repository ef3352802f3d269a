/**
 * What the discovery and search benches share: a bench database loaded with synthetic entries
 * (bench/synthetic-entries.ts), vacuumed as a settled server's would be, and the compiled registry
 * serving it with rate limits off, all torn down after `use`, on failure too.
 */
import { randomBytes } from "node:crypto";
import { type Database, migrateToLatest, openDatabase } from "../src/storage/database.js";
import { createBenchDatabase, type BenchDatabase } from "./bench-database.js";
import { freePort, startChild, waitForHttp, type Child } from "./child-processes.js";
import { loadEntries, type LoadReport } from "./synthetic-entries.js";

export interface LoadedRegistryOptions {
  readonly adminUrl: string;
  readonly entries: number;
  readonly logFile: string;
  readonly say: (text: string) => void;
  /** Names the bench in its progress lines. */
  readonly label: string;
  /** The tables to vacuum after the load, so index-only reads find a settled visibility map. */
  readonly vacuum: readonly string[];
}

export interface LoadedRegistry {
  readonly db: Database;
  readonly load: LoadReport;
  readonly url: string;
  /** The server's cursor secret, so a bench can make the cursors the server would. */
  readonly secret: string;
}

export async function withLoadedRegistry<T>(options: LoadedRegistryOptions, use: (loaded: LoadedRegistry) => Promise<T>): Promise<T> {
  const database = await createBenchDatabase(options.adminUrl);
  let server: Child | undefined;
  // Loading a million rows takes minutes: both the statement timeout and the client's query
  // timeout (6 s by default, meant for the server's calls) must outlast it.
  const db = await openDatabase({ databaseUrl: database.url, dataDir: "", statementTimeoutMs: 900_000, databaseQueryTimeoutMs: 960_000 });
  try {
    await migrateToLatest(db);
    options.say(`${options.label}: loading ${options.entries.toLocaleString("en")} entries into ${database.name}`);
    const load = await loadEntries(db.knex, { count: options.entries });
    await db.knex.raw(`vacuum analyze ${options.vacuum.join(", ")}`);
    options.say(`  loaded in ${load.seconds} s (${load.names.toLocaleString("en")} names, table and indexes ${load.tableMb} MB)`);
    const secret = randomBytes(32).toString("base64url");
    const started = await startServer(database, secret, options.logFile);
    server = started.child;
    return await use({ db, load, url: started.url, secret });
  } finally {
    await server?.stop();
    await db.close();
    await database.drop();
  }
}

async function startServer(database: BenchDatabase, secret: string, logFile: string): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  Object.assign(env, {
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_URL: database.url,
    NODE_ENV: "production",
    RATE_LIMIT_RPS: "0",
    REGISTRY_CURSOR_SECRET: secret,
  });
  const child = startChild("registry-loaded", ["dist/src/cli/run.js", "serve"], { env, logFile });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/readyz`, child);
  return { child, url };
}
