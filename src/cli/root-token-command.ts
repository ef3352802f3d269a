import { parseArgs } from "node:util";
import { joinOptionValues } from "./option-values.js";
import { createKnexAuthRepository, type AuthRepository, type RootTokenRecord } from "../auth/auth-repository.js";
import {
  generateRootToken,
  generateRootTokenId,
  hashRootToken,
  isKnownScope,
  isRootTokenId,
  knownScopes,
} from "../auth/root-tokens.js";
import type { RegistryConfig } from "../config.js";
import { ed25519KeyFromDid } from "../domain/did-key.js";
import { RegistryError } from "../errors.js";
import { migrateToLatest, openDatabase } from "../storage/database.js";

/** Where the command writes; tests pass their own, the CLI the process's streams. */
export interface RootTokenCommandIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

export type RootTokenCommandConfig = Pick<RegistryConfig, "databaseUrl" | "dataDir" | "entryTypes">;

export const ROOT_TOKEN_USAGE = `Usage:
  registry root-token create --subject <did:key> --scopes <a,b> [--description <text>]
  registry root-token list [--json]
  registry root-token revoke <id>

"create" prints the new root token, and only it, on stdout. It is shown this once: the registry
keeps only its SHA-256 hash. Scopes are registry.publish.<entryType>, registry.publish.* and
registry.admin; the access tokens it is exchanged for carry some of them and the --subject DID.
The commands work on the database of DATABASE_URL (or REGISTRY_DATA_DIR), also while a server
runs against a Postgres one.
`;

const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;
const MAX_DESCRIPTION_CHARS = 500;

/** Bad command line: answered with the usage text and exit code 2. */
class UsageError extends Error {}
/** The command line was fine but the work failed (unknown id, database down): exit code 1. */
class CommandError extends Error {}

/**
 * Runs `registry root-token ...`. `args` are the words after "root-token" (a leading "root-token"
 * is skipped too). Returns the process exit code instead of exiting, so it can run in-process.
 */
export async function runRootTokenCommand(
  args: string[],
  config: RootTokenCommandConfig,
  io: RootTokenCommandIo,
): Promise<number> {
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
  const token = generateRootToken();
  const record = await withRepository(config, (repository) =>
    repository.createRootToken({
      id: generateRootTokenId(),
      tokenHash: hashRootToken(token),
      subject,
      scopes,
      description,
    }),
  );
  // stdout carries the token alone, so `TOKEN=$(registry root-token create ...)` works.
  io.stdout(`${token}\n`);
  io.stderr(`created root token ${record.id} for ${record.subject} (${record.scopes.join(", ")})\n`);
  return EXIT_OK;
}

async function listCommand(args: string[], config: RootTokenCommandConfig, io: RootTokenCommandIo): Promise<number> {
  const { values } = parseCommandLine(args, { json: { type: "boolean" } });
  if (values.help === true) return printUsage(io);
  const records = await withRepository(config, (repository) => repository.listRootTokens());
  if (values.json === true) {
    for (const record of records) io.stdout(`${JSON.stringify(jsonOf(record))}\n`);
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
  const existed = await withRepository(config, (repository) => repository.revokeRootToken(id));
  if (!existed) throw new CommandError(`no root token has the id ${id}`);
  io.stdout(`revoked ${id}\n`);
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
      options: { ...options, help: { type: "boolean", short: "h" } },
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
    ...new Set((given ?? []).flatMap((list) => list.split(",")).map((scope) => scope.trim()).filter(Boolean)),
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

/** Opens the database (migrating it first, so a fresh one works), runs `work`, and closes it. */
async function withRepository<T>(
  config: RootTokenCommandConfig,
  work: (repository: AuthRepository) => Promise<T>,
): Promise<T> {
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    await migrateToLatest(database);
    return await work(createKnexAuthRepository(database.knex));
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
    revokedAt: record.revokedAt?.toISOString() ?? null,
  };
}

function table(records: readonly RootTokenRecord[]): string {
  const rows = [
    ["ID", "SUBJECT", "SCOPES", "CREATED", "REVOKED", "DESCRIPTION"],
    ...records.map((record) => [
      record.id,
      record.subject,
      record.scopes.join(","),
      record.createdAt.toISOString(),
      record.revokedAt?.toISOString() ?? "-",
      record.description,
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd() + "\n")
    .join("");
}

function printUsage(io: RootTokenCommandIo): number {
  io.stdout(ROOT_TOKEN_USAGE);
  return EXIT_OK;
}

function reportFailure(error: unknown, io: RootTokenCommandIo): number {
  if (error instanceof UsageError) {
    io.stderr(`registry root-token: ${error.message}\n\n${ROOT_TOKEN_USAGE}`);
    return EXIT_USAGE;
  }
  if (error instanceof CommandError || error instanceof RegistryError) {
    io.stderr(`registry root-token: ${error.message}\n`);
    return EXIT_FAILURE;
  }
  throw error;
}
