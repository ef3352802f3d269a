import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";

interface HistoryOptions extends ClientOptions {
  readonly logKey?: string;
}

/** `registry history <did>[@version]`: the log records about a name or a version, verified, one line each. */
export function registerHistoryCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("history")
      .description(
        "list the transparency log's records about a name (or a version and its name), oldest first: index, kind, time, who, what; each proved against one signed checkpoint",
      )
      .argument("<did>", "did:reg:<network>:<type>:<name>[@<version>]")
      .option("--log-key <key>", "the log's verifier key to trust (default: REGISTRY_LOG_KEY, else the one the server publishes)"),
  )
    .addHelpText(
      "after",
      "\nExit code 6 when a record or proof does not verify. Changes of the last seconds appear once the log integrates them.",
    )
    .action(async (did: string, options: HistoryOptions) => {
      const { runClientCommand } = await import("../client-command.js");
      const { verifiedHistory } = await import("../verified-history.js");
      const { historyJson, historyLines } = await import("../history-lines.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
        const history = await verifiedHistory(client, did, options.logKey ?? (context.env.REGISTRY_LOG_KEY || undefined));
        if (json) printJson(historyJson(history));
        else context.stdout(historyLines(history.records));
      });
    });
}
