import type { Command } from "commander";
import { registryUrl, type CliContext } from "../cli-context.js";
import { withRegistryOptions, type ClientOptions } from "../client-options.js";
import { credentialsPath, removeCredentials } from "../credentials-store.js";
import { EXIT } from "../exit-codes.js";

/** `registry logout`: forgets the root token and access tokens kept for a registry. */
export function registerLogoutCommand(program: Command, context: CliContext): void {
  withRegistryOptions(
    program.command("logout").description("remove the credentials `registry login` kept for a registry (its root and access tokens)"),
  )
    .addHelpText(
      "after",
      "\nOnly the copy on this machine goes: the registry still honours the tokens until they expire.\n" +
        "To end the root token itself, revoke it (registry root-token revoke <id>).",
    )
    .action(async (options: ClientOptions) => {
      const { reportFailure } = await import("../client-command.js");
      const json = options.json === true;
      let registry = "";
      try {
        registry = registryUrl(options.registry, context);
        const removed = await removeCredentials(context, registry);
        const credentialsFile = credentialsPath(context);
        if (json) context.stdout(`${JSON.stringify({ registry, removed, credentialsFile }, null, 2)}\n`);
        else if (removed) context.stdout`logged out of ${registry}: its credentials are removed from ${credentialsFile}\n`;
        else context.stdout`not logged in to ${registry}: nothing to remove\n`;
        context.exitCode = EXIT.ok;
      } catch (error) {
        context.exitCode = reportFailure(error, registry, json, context);
      }
    });
}
