import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";

/** `registry resolve <did>[@version]`. */
export function registerResolveCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("resolve")
      .description("show one version of an entry, or its latest without @version, with its status and marks")
      .argument("<did>", "did:reg:<network>:<type>:<name>[@<version>]"),
  )
    .addHelpText(
      "after",
      "\nA deprecated, yanked, quarantined, revoked or removed version, or an archived name, is also said on\n" +
        "stderr, one line per mark, so it is seen when stdout goes elsewhere. --json carries the marks as the API does.",
    )
    .action(async (did: string, options: ClientOptions) => {
      const { describeEntry, entryJson, runClientCommand } = await import("../client-command.js");
      const { entryMarks, markNotice } = await import("../entry-marks.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
        const entry = await client.resolve(did);
        if (json) {
          printJson(entryJson(entry));
          return;
        }
        context.stdout(describeEntry(entry));
        // After stdout, so a reader of both sees the entry before what to make of it.
        for (const mark of entryMarks(entryJson(entry))) context.stderr(markNotice(entry.entryDid, mark));
      });
    });
}
