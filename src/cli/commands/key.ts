import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";

/** `registry key generate [--out <file>]`. */
export function registerKeyCommand(program: Command, context: CliContext): void {
  program
    .command("key")
    .description("make publisher keys")
    .command("generate")
    .description("make an Ed25519 key and its did:key; printed as JSON, or written to a new file with --out")
    .option("--out <file>", "write the key to this file, mode 0600; refuses to overwrite an existing file")
    .option("--json", "JSON on stdout (the output is JSON in any case)")
    .action(async (options: { out?: string }) => {
      const args = options.out === undefined ? [] : [`--out=${options.out}`];
      context.exitCode = await runKey(["key", "generate", ...args], context);
    });
}

/** Runs key-commands.ts, which does the work for `key` and `sign`. */
export async function runKey(args: string[], context: CliContext): Promise<number> {
  const { runKeyCommand } = await import("../key-commands.js");
  return runKeyCommand(args, { stdout: context.stdout, stderr: context.stderr, env: context.env, readStdin: context.readStdin });
}
