import type { Command } from "commander";
import { loadConfig } from "../../config.js";
import type { CliContext } from "../cli-context.js";

/** `registry issuer-key list|rotate`, on the configured database. */
export function registerIssuerKeyCommand(program: Command, context: CliContext): void {
  const group = program.command("issuer-key").description("show or rotate the token issuer's signing keys");
  group
    .command("list")
    .description("the keys in the JWKS (kid, current or retired)")
    .action(async () => {
      context.exitCode = await run("list", context);
    });
  group
    .command("rotate")
    .description("make a new signing key current; the old one keeps verifying its tokens until they expire")
    .action(async () => {
      context.exitCode = await run("rotate", context);
    });
}

async function run(command: "list" | "rotate", context: CliContext): Promise<number> {
  const { runIssuerKeyCommand } = await import("../issuer-key-command.js");
  return runIssuerKeyCommand([command], loadConfig(), context);
}
