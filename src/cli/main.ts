import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, role } from "../config.js";
import { DatabaseInUseError } from "../storage/database.js";

const USAGE = `usage: registry <command>       (--help anywhere shows this and runs nothing; --version)

  serve [--role all|registry|auth]   run the service (PORT, HOST, DATABASE_URL, ... from the environment)
  migrate                            apply database migrations and exit
  root-token create --subject <did:key> --scopes <a,b> [--description <text>]
  root-token list
  root-token revoke <id>
  issuer-key list | rotate           show or rotate the token issuer's signing keys
  key generate                       make an Ed25519 key and its did:key
  sign entry --key <seed> --file <entry.json|->
  sign revoke --key <seed> --did <did> --reason <text>
`;

const io = {
  stdout: (text: string) => void process.stdout.write(text),
  stderr: (text: string) => void process.stderr.write(text),
};

/**
 * Flags that ask for help. Checked before anything runs, wherever they stand: asking how a command
 * works must never run it (`issuer-key rotate --help` once rotated the key). Only words after `--`
 * are exempt.
 */
const HELP_FLAGS = new Set(["--help", "-h"]);

/** This build's version, from the package.json it ships with (two levels up from src/cli, or dist/src/cli). */
function version(): string {
  for (const relative of ["../../package.json", "../../../package.json"]) {
    try {
      const text = readFileSync(new URL(relative, import.meta.url), "utf8");
      const parsed = JSON.parse(text) as { name?: string; version?: string };
      if (parsed.name === "open-registry" && parsed.version !== undefined) return parsed.version;
    } catch {
      // Not this one: the sources and the build sit at different depths.
    }
  }
  return "unknown";
}

/** The `registry` command line. Returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const beforeValues = argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv;
  if (command === "--version" || command === "-V") {
    io.stdout(`${version()}\n`);
    return 0;
  }
  if (command === undefined || command === "help" || beforeValues.some((word) => HELP_FLAGS.has(word))) {
    io.stdout(USAGE);
    return 0;
  }
  try {
    switch (command) {
      case "serve":
        return await serve(rest);
      case "migrate":
        return await migrate();
      // Each command loads only its own modules: signing a file should not load the server.
      case "root-token": {
        const { runRootTokenCommand } = await import("./root-token-command.js");
        return await runRootTokenCommand(rest, loadConfig(), io);
      }
      case "issuer-key": {
        const { runIssuerKeyCommand } = await import("./issuer-key-command.js");
        return await runIssuerKeyCommand(rest, loadConfig(), io);
      }
      case "key":
      case "sign": {
        const { runKeyCommand } = await import("./key-commands.js");
        return await runKeyCommand([command, ...rest], io);
      }
      default:
        io.stderr(`registry: unknown command "${command}"\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    const errno = error as NodeJS.ErrnoException & { address?: string; port?: number };
    if (errno.code === "EADDRINUSE") {
      io.stderr(`registry: ${errno.address ?? "the address"}:${errno.port ?? "?"} is already in use; set PORT (and HOST) to listen elsewhere\n`);
      return 1;
    }
    if (error instanceof ConfigError || error instanceof DatabaseInUseError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr(`registry: ${(error as Error).message}\n`);
      return 2;
    }
    throw error;
  }
}

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { role: { type: "string" } } });
  const config = loadConfig(process.env, values.role === undefined ? {} : { role: role(values.role) });
  // Loaded here, like the server: the other commands have no use for pino.
  const { createLogger, describeError } = await import("../logger.js");
  const logger = createLogger(undefined, { level: config.logLevel });
  const { startRegistry } = await import("../app.js");
  const registry = await startRegistry(config, { logger });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      // A second signal, of either kind, takes its default action: the process ends at once.
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      logger.info("shutting down", { signal });
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await registry.close().catch((error: unknown) => logger.error("shutdown failed", describeError(error)));
  return 0;
}

async function migrate(): Promise<number> {
  const { migrateToLatest, openDatabase } = await import("../storage/database.js");
  const config = loadConfig();
  const database = await openDatabase(config);
  try {
    const applied = await migrateToLatest(database);
    io.stdout(applied.length === 0 ? "already up to date\n" : `applied: ${applied.join(", ")}\n`);
    return 0;
  } finally {
    await database.close();
  }
}
