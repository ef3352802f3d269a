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
    .description("create, list or revoke root tokens on the configured database");
  group
    .command("create")
    .description("create a root token; prints it, and only it, on stdout (shown this once)")
    .requiredOption("--subject <did:key>", "the publisher's DID the access tokens will carry")
    .requiredOption("--scopes <a,b>", "registry.publish.<entryType>, registry.publish.*, registry.admin (comma-separated or repeated)", collect, [])
    .option("--description <text>", "a note for whoever lists the tokens later")
    .action(async (options: { subject: string; scopes: string[]; description?: string }) => {
      const args = [`--subject=${options.subject}`, ...options.scopes.map((scope) => `--scopes=${scope}`)];
      if (options.description !== undefined) args.push(`--description=${options.description}`);
      context.exitCode = await run(["create", ...args], context);
    });
  group
    .command("list")
    .description("list the root tokens (id, subject, scopes; never the tokens)")
    .option("--json", "one JSON object per line")
    .action(async (options: { json?: boolean }) => {
      context.exitCode = await run(["list", ...(options.json === true ? ["--json"] : [])], context);
    });
  group
    .command("revoke")
    .description("revoke a root token by its id (rt_...)")
    .argument("<id>", "the root token's id, as list shows it")
    .action(async (id: string) => {
      context.exitCode = await run(["revoke", "--", id], context);
    });
}

async function run(args: string[], context: CliContext): Promise<number> {
  const { runRootTokenCommand } = await import("../root-token-command.js");
  return runRootTokenCommand(args, loadConfig(), context);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
