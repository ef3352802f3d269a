import { readFileSync } from "node:fs";
import { text } from "node:stream/consumers";
import { Command, CommanderError } from "commander";
import { ConfigError } from "../config.js";
import { DatabaseInUseError } from "../storage/database.js";
import type { CliContext } from "./cli-context.js";
import { registerCompletionCommand } from "./commands/completion.js";
import { registerDiscoverCommand } from "./commands/discover.js";
import { registerEntryActionCommands } from "./commands/entry-actions.js";
import { registerHistoryCommand } from "./commands/history.js";
import { registerIssuerKeyCommand } from "./commands/issuer-key.js";
import { registerKeyCommand } from "./commands/key.js";
import { registerLoginCommand } from "./commands/login.js";
import { registerLogoutCommand } from "./commands/logout.js";
import { registerMigrateCommand } from "./commands/migrate.js";
import { registerPublishCommand } from "./commands/publish.js";
import { registerQueryCommand } from "./commands/query.js";
import { registerResolveCommand } from "./commands/resolve.js";
import { registerMirrorCommand } from "./commands/mirror.js";
import { registerVerifyCommand } from "./commands/verify.js";
import { registerRevokeCommand } from "./commands/revoke.js";
import { registerRootTokenCommand } from "./commands/root-token.js";
import { registerSearchCommand } from "./commands/search.js";
import { registerServeCommand } from "./commands/serve.js";
import { registerSignCommand } from "./commands/sign.js";
import { registerVersionsCommand } from "./commands/versions.js";
import { registerWaitCommand } from "./commands/wait.js";
import { registerWhoamiCommand } from "./commands/whoami.js";
import { EXIT, EXIT_CODES_HELP } from "./exit-codes.js";
import { createTerminalWriter } from "./terminal-writer.js";

/** This build's version, from the package.json it ships with (two levels up from src/cli, or dist/src/cli). */
function version(): string {
  for (const relative of ["../../package.json", "../../../package.json"]) {
    try {
      const contents = readFileSync(new URL(relative, import.meta.url), "utf8");
      const parsed = JSON.parse(contents) as { name?: string; version?: string };
      if (parsed.name === "open-registry" && parsed.version !== undefined) return parsed.version;
    } catch {
      // Not this one: the sources and the build sit at different depths.
    }
  }
  return "unknown";
}

/**
 * The `registry` program: one file per command under commands/. Commander answers --help and -h
 * (on every command, wherever they stand before `--`) before any action runs, so asking how a
 * command works never runs it.
 */
function createProgram(context: CliContext): Command {
  const program = new Command("registry")
    .description("publish, find and manage signed skill and agent entries; run the registry")
    .version(version(), "-V, --version", "print the version")
    .exitOverride()
    .showHelpAfterError("(add --help for usage)")
    .configureOutput({ writeOut: context.stdout, writeErr: context.stderr })
    .addHelpText("after", `\n${EXIT_CODES_HELP}\n\nEvery command has --help. docs/cli.md has an example of each.`);
  registerServeCommand(program, context);
  registerMigrateCommand(program, context);
  registerRootTokenCommand(program, context);
  registerIssuerKeyCommand(program, context);
  registerKeyCommand(program, context);
  registerSignCommand(program, context);
  registerLoginCommand(program, context);
  registerWhoamiCommand(program, context);
  registerLogoutCommand(program, context);
  registerPublishCommand(program, context);
  registerResolveCommand(program, context);
  registerVerifyCommand(program, context);
  registerHistoryCommand(program, context);
  registerMirrorCommand(program, context);
  registerVersionsCommand(program, context);
  registerRevokeCommand(program, context);
  registerEntryActionCommands(program, context);
  registerDiscoverCommand(program, context);
  registerQueryCommand(program, context);
  registerSearchCommand(program, context);
  registerWaitCommand(program, context);
  registerCompletionCommand(program, context);
  return program;
}

/** The process's side of a CliContext. */
function processContext(): CliContext {
  return {
    env: process.env,
    stdout: createTerminalWriter((chunk) => void process.stdout.write(chunk)),
    stderr: createTerminalWriter((chunk) => void process.stderr.write(chunk)),
    stderrIsTty: process.stderr.isTTY === true,
    stdinIsTty: process.stdin.isTTY === true,
    readStdin: () => text(process.stdin),
    exitCode: EXIT.ok,
  };
}

/** The `registry` command line. Returns the process exit code. */
export async function main(argv: string[], context: CliContext = processContext()): Promise<number> {
  const program = createProgram(context);
  try {
    // Bare `registry` shows the help and succeeds, as `registry help` does.
    await program.parseAsync(argv.length === 0 ? ["help"] : argv, { from: "user" });
    return context.exitCode;
  } catch (error) {
    return exitCodeOfFailure(error, context);
  }
}

function exitCodeOfFailure(error: unknown, context: CliContext): number {
  if (error instanceof CommanderError) {
    // Help and --version end the parse this way too; every other commander error is a usage error.
    const done =
      error.code === "commander.helpDisplayed" ||
      error.code === "commander.version" ||
      (error.code === "commander.help" && error.exitCode === 0);
    return done ? EXIT.ok : EXIT.usage;
  }
  const errno = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (errno.code === "EADDRINUSE") {
    context.stderr`registry: ${errno.address ?? "the address"}:${errno.port ?? "?"} is already in use; set PORT (and HOST) to listen elsewhere\n`;
    return EXIT.refused;
  }
  if (error instanceof ConfigError || error instanceof DatabaseInUseError) {
    context.stderr`registry: ${error.message}\n`;
    return EXIT.usage;
  }
  throw error;
}
