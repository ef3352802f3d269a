import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";

/** `registry versions <did>`. */
export function registerVersionsCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("versions")
      .description("list every version of an entry, highest first, with its status")
      .argument("<did>", "did:reg:<network>:<type>:<name> (without @version)"),
  ).action(async (did: string, options: ClientOptions) => {
    const { runClientCommand, statusName, versionJson } = await import("../client-command.js");
    context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
      const versions = await client.versions(did);
      if (json) {
        printJson({ versions: versions.map(versionJson) });
        return;
      }
      for (const version of versions) {
        const fields = versionJson(version);
        context.stdout`${version.version}\t${statusName(fields.status)}\t${fields.publishedAt ?? ""}\n`;
      }
    });
  });
}
