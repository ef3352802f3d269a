import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";

/** `registry resolve <did>[@version]`. */
export function registerResolveCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("resolve")
      .description("show one version of an entry, or its latest without @version; revoked versions show their status")
      .argument("<did>", "did:reg:<network>:<type>:<name>[@<version>]"),
  ).action(async (did: string, options: ClientOptions) => {
    const { describeEntry, entryJson, runClientCommand } = await import("../client-command.js");
    context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
      const entry = await client.resolve(did);
      if (json) printJson(entryJson(entry));
      else context.stdout(describeEntry(entry));
    });
  });
}
