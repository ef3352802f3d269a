import { parseArgs } from "node:util";
import { joinOptionValues } from "./option-values.js";
import type { RootTokenRecord } from "../auth/auth-repository.js";
import { createKnexAuthRepository } from "../storage/knex-auth-repository.js";
import {
  createRootTokenAdmin,
  MAX_ROOT_TOKEN_DESCRIPTION_CHARS as MAX_DESCRIPTION_CHARS,
  type RootTokenAdmin,
} from "../auth/root-token-admin.js";
import { isKnownScope, isRootTokenId, knownScopes } from "../auth/root-tokens.js";
import type { RegistryConfig } from "../config.js";
import { ed25519KeyFromDid } from "../domain/did-key.js";
import { RegistryError } from "../errors.js";
import { DatabaseInUseError, migrateToLatest, openDatabase, type Database } from "../storage/database.js";
import { terminal, terminalText } from "./terminal-text.js";

/** Where the command writes; tests pass their own, the CLI the process's streams. */
export interface RootTokenCommandIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Where the root tokens are; registryUrl (else port) finds a server that holds the embedded database. */
export type RootTokenCommandConfig = Pick<RegistryConfig, "databaseUrl" | "dataDir" | "entryTypes"> &
  Partial<Pick<RegistryConfig, "port" | "registryUrl">>;

export const ROOT_TOKEN_USAGE = `Usage:
  registry root-token create --subject <did:key> --scopes <a,b> [--description <text>] [--verbose]
  registry root-token list [--json] [--verbose]
  registry root-token revoke <id> [--verbose]

"create" prints the new root token, and only it, on stdout. It is shown this once: the registry
keeps only its SHA-256 hash. Scopes are registry.publish.<entryType>, registry.publish.* and
registry.admin; the access tokens it is exchanged for carry some of them and the --subject DID.
The commands work on the database of DATABASE_URL (or REGISTRY_DATA_DIR), also while a server
runs against a Postgres one. While a server holds the embedded database in REGISTRY_DATA_DIR, they
ask that server instead, through its admin API (auth.v1.AdminService at REGISTRY_URL, default
http://127.0.0.1:PORT), with the credential it wrote to REGISTRY_DATA_DIR/admin-credential.
--verbose says on stderr which way was taken.
`;

const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Bad command line: answered with the usage text and exit code 2. */
class UsageError extends Error {}

/**
 * Runs `registry root-token ...`. `args` are the words after "root-token" (a leading "root-token"
 * is skipped too). Returns the process exit code instead of exiting, so it can run in-process.
 */
export async function runRootTokenCommand(args: string[], config: RootTokenCommandConfig, io: RootTokenCommandIo): Promise<number> {
  const [command, ...rest] = args[0] === "root-token" ? args.slice(1) : args;
  try {
    switch (command) {
      case "create":
        return await createCommand(rest, config, io);
      case "list":
        return await listCommand(rest, config, io);
      case "revoke":
        return await revokeCommand(rest, config, io);
      case "help":
      case "--help":
      case "-h":
        io.stdout(ROOT_TOKEN_USAGE);
        return EXIT_OK;
      default:
        throw new UsageError(command === undefined ? "a command is required" : `unknown command: ${command}`);
    }
  } catch (error) {
    return reportFailure(error, io);
  }
}

async function createCommand(args: string[], config: RootTokenCommandConfig, io: RootTokenCommandIo): Promise<number> {
  const { values } = parseCommandLine(args, {
    subject: { type: "string" },
    scopes: { type: "string", multiple: true },
    description: { type: "string" },
  });
  if (values.help === true) return printUsage(io);
  const subject = validSubject(values.subject as string | undefined);
  const scopes = validScopes(values.scopes as string[] | undefined, config.entryTypes);
  const description = validDescription(values.description as string | undefined);
  const { token, record } = await withRootTokens(config, verboseIo(values, io), (admin) => admin.create({ subject, scopes, description }));
  // stdout carries the token alone, so `TOKEN=$(registry root-token create ...)` works.
  io.stdout(terminal`${token}\n`);
  io.stderr(terminal`created root token ${record.id} for ${record.subject} (${record.scopes.join(", ")})\n`);
  return EXIT_OK;
}

async function listCommand(args: string[], config: RootTokenCommandConfig, io: RootTokenCommandIo): Promise<number> {
  const { values } = parseCommandLine(args, { json: { type: "boolean" } });
  if (values.help === true) return printUsage(io);
  const records = await withRootTokens(config, verboseIo(values, io), (admin) => admin.list());
  if (values.json === true) {
    // ListRootTokensResponse's JSON: the list named rootTokens, an unset revokedAt left out.
    io.stdout(`${JSON.stringify({ rootTokens: records.map(jsonOf) }, null, 2)}\n`);
  } else {
    io.stdout(table(records));
  }
  return EXIT_OK;
}

async function revokeCommand(args: string[], config: RootTokenCommandConfig, io: RootTokenCommandIo): Promise<number> {
  const { values, positionals } = parseCommandLine(args, {}, true);
  if (values.help === true) return printUsage(io);
  if (positionals.length !== 1) throw new UsageError("revoke takes exactly one root token id");
  const id = positionals[0]!;
  if (!isRootTokenId(id)) throw new UsageError(`"${id}" is not a root token id (rt_ and 16 hex digits)`);
  await withRootTokens(config, verboseIo(values, io), (admin) => admin.revoke(id));
  io.stdout(terminal`revoked ${id}\n`);
  return EXIT_OK;
}

type OptionSpec = Record<string, { type: "string" | "boolean"; multiple?: boolean }>;

interface CommandLine {
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly positionals: string[];
}

function parseCommandLine(args: string[], options: OptionSpec, allowPositionals = false): CommandLine {
  try {
    return parseArgs({
      args: joinOptionValues(args, options),
      options: { ...options, help: { type: "boolean", short: "h" }, verbose: { type: "boolean" } },
      strict: true,
      allowPositionals,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function validSubject(subject: string | undefined): string {
  if (subject === undefined || subject === "") throw new UsageError("--subject is required");
  const key = ed25519KeyFromDid(subject);
  if ("error" in key) throw new UsageError(`--subject: ${key.error}`);
  return subject;
}

function validScopes(given: string[] | undefined, entryTypes: readonly string[]): string[] {
  const scopes = [
    ...new Set(
      (given ?? [])
        .flatMap((list) => list.split(","))
        .map((scope) => scope.trim())
        .filter(Boolean),
    ),
  ];
  if (scopes.length === 0) throw new UsageError("--scopes is required (comma-separated)");
  const unknown = scopes.filter((scope) => !isKnownScope(scope, entryTypes));
  if (unknown.length > 0) {
    throw new UsageError(`--scopes: unknown ${unknown.join(", ")}; known: ${knownScopes(entryTypes).join(", ")}`);
  }
  return scopes;
}

function validDescription(description: string | undefined): string {
  const text = description ?? "";
  if (text.length > MAX_DESCRIPTION_CHARS) {
    throw new UsageError(`--description must be at most ${MAX_DESCRIPTION_CHARS} characters`);
  }
  return text;
}

/** Where --verbose notes go: stderr with the flag, nowhere without it. */
function verboseIo(values: CommandLine["values"], io: RootTokenCommandIo): (text: string) => void {
  return values.verbose === true ? (text) => io.stderr(terminal`registry root-token: ${text}\n`) : () => {};
}

/**
 * Runs `work` on the database (migrated first, so a fresh one works), or, when a running server
 * holds the embedded database, through that server's admin API: the same operations either way,
 * so the output cannot tell them apart.
 */
async function withRootTokens<T>(
  config: RootTokenCommandConfig,
  note: (text: string) => void,
  work: (admin: RootTokenAdmin) => Promise<T>,
): Promise<T> {
  let database: Database;
  try {
    database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  } catch (error) {
    if (!(error instanceof DatabaseInUseError)) throw error;
    const { connectAdminApi } = await import("./admin-api-client.js");
    const admin = await connectAdminApi(config, error);
    note(`the embedded database is in use; asking the server at ${admin.url} through its admin API`);
    return work(admin);
  }
  try {
    note(`working on the ${database.kind === "pglite" ? `embedded database in ${config.dataDir}` : "database of DATABASE_URL"} directly`);
    await migrateToLatest(database);
    return await work(createRootTokenAdmin({ repository: createKnexAuthRepository(database.knex), entryTypes: config.entryTypes }));
  } finally {
    await database.close();
  }
}

function jsonOf(record: RootTokenRecord) {
  return {
    id: record.id,
    subject: record.subject,
    scopes: record.scopes,
    description: record.description,
    createdAt: record.createdAt.toISOString(),
    ...(record.revokedAt ? { revokedAt: record.revokedAt.toISOString() } : {}),
  };
}

function table(records: readonly RootTokenRecord[]): string {
  const rows = [
    ["ID", "SUBJECT", "SCOPES", "CREATED", "REVOKED", "DESCRIPTION"],
    ...records.map((record) =>
      [
        record.id,
        record.subject,
        record.scopes.join(","),
        record.createdAt.toISOString(),
        record.revokedAt?.toISOString() ?? "-",
        record.description,
      ].map(terminalText),
    ),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map(
      (row) =>
        `${row
          .map((cell, column) => cell.padEnd(widths[column]!))
          .join("  ")
          .trimEnd()}\n`,
    )
    .join("");
}

function printUsage(io: RootTokenCommandIo): number {
  io.stdout(ROOT_TOKEN_USAGE);
  return EXIT_OK;
}

function reportFailure(error: unknown, io: RootTokenCommandIo): number {
  if (error instanceof UsageError) {
    io.stderr(terminal`registry root-token: ${error.message}\n\n` + ROOT_TOKEN_USAGE);
    return EXIT_USAGE;
  }
  // The work failed (unknown id, a server that refused): the message says why, exit code 1.
  if (error instanceof RegistryError) {
    io.stderr(terminal`registry root-token: ${error.message}\n`);
    return EXIT_FAILURE;
  }
  throw error;
}
