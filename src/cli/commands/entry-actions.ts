import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions } from "../client-options.js";
import { SIGNING_KEY_HELP } from "../signing-key.js";
import { ENTRY_ACTION_COMMANDS, type EntryActionOptions } from "./entry-action-table.js";

/** What a command acts on: a version or every version of a name, or the name itself. */
const TARGETS = {
  did: {
    argument: "<did>",
    syntax: "did:reg:<network>:<type>:<name>[@<version>]",
    help: "\nWith @version it acts on that version; without, on every version of the name that is not removed.",
  },
  name: {
    argument: "<name>",
    syntax: "did:reg:<network>:<type>:<name>, without @version",
    help: "\nIt acts on the name, and shows on every version of it.",
  },
} as const;

/** Registers every command of the table: `registry deprecate <did> --reason <text>` and the others. */
export function registerEntryActionCommands(program: Command, context: CliContext): void {
  for (const declared of ENTRY_ACTION_COMMANDS) {
    const target = declared.nameOnly ? TARGETS.name : TARGETS.did;
    const command = program.command(declared.name).description(declared.description).argument(target.argument, target.syntax);
    for (const option of declared.options) command.addOption(option);
    command.option("--key <key>", SIGNING_KEY_HELP);
    withClientOptions(command)
      .addHelpText("after", target.help + declared.help)
      .action(async (did: string, options: EntryActionOptions) => {
        const { runEntryAction } = await import("./entry-action-run.js");
        context.exitCode = await runEntryAction(declared, did, options, context);
      });
  }
}
