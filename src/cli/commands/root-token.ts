import type { Command } from "commander";
import { loadConfig } from "../../config.js";
import type { CliContext } from "../cli-context.js";

/**
 * `registry root-token create|list|revoke`: commander parses and documents the command line, and
 * runRootTokenCommand does the work as before, given the options back in `--name=value` form (so a
 * value starting with "-" stays a value).
 */
export function registerRootTokenCommand(program: Command, context: CliContext): void {
  const group = program
    .command("root-token")
    .description("create, list or revoke root tokens on the configured database")
    .addHelpText("after", ROOT_TOKEN_NOTES);
  group
    .command("create")
    .description("create a root token; prints it, and only it, on stdout (shown this once)")
    .requiredOption("--subject <did:key>", "the publisher's DID the access tokens will carry")
    .requiredOption(
      "--scopes <a,b>",
      "registry.publish.<entryType>, registry.publish.*, registry.admin (comma-separated or repeated)",
      collect,
      [],
    )
    .option("--description <text>", "a note for whoever lists the tokens later")
    .option("--verbose", VERBOSE_HELP)
    .addHelpText("after", ROOT_TOKEN_NOTES)
    .action(async (options: { subject: string; scopes: string[]; description?: string; verbose?: boolean }) => {
      const args = [`--subject=${options.subject}`, ...options.scopes.map((scope) => `--scopes=${scope}`)];
      if (options.description !== undefined) args.push(`--description=${options.description}`);
      context.exitCode = await run(["create", ...args, ...verbose(options)], context);
    });
  group
    .command("list")
    .description("list the root tokens (id, subject, scopes; never the tokens)")
    .option("--json", 'print {"rootTokens": [...]}, as GET /v1/admin/root-tokens answers')
    .option("--verbose", VERBOSE_HELP)
    .action(async (options: { json?: boolean; verbose?: boolean }) => {
      context.exitCode = await run(["list", ...(options.json === true ? ["--json"] : []), ...verbose(options)], context);
    });
  group
    .command("revoke")
    .description("revoke a root token by its id (rt_...)")
    .argument("<id>", "the root token's id, as list shows it")
    .option("--verbose", VERBOSE_HELP)
    .action(async (id: string, options: { verbose?: boolean }) => {
      context.exitCode = await run(["revoke", ...verbose(options), "--", id], context);
    });
}

const VERBOSE_HELP = "say on stderr whether the database or the running server's admin API was used";

const ROOT_TOKEN_NOTES = `
The token is shown this once: the registry keeps only its SHA-256 hash. The commands work on the
database of DATABASE_URL (or REGISTRY_DATA_DIR); while a server holds the embedded database, they
ask that server through its admin API instead (docs/operations.md).
`;

function verbose(options: { verbose?: boolean }): string[] {
  return options.verbose === true ? ["--verbose"] : [];
}

async function run(args: string[], context: CliContext): Promise<number> {
  const { runRootTokenCommand } = await import("../root-token-command.js");
  return runRootTokenCommand(args, loadConfig(), context);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
