import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";

interface VerifyOptions extends ClientOptions {
  readonly logKey?: string;
  readonly history?: boolean;
  readonly moderator?: readonly string[];
}

/** `registry verify <did>[@version]`: the entry the registry serves, proved from the transparency log. */
export function registerVerifyCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("verify")
      .description(
        "prove the entry the registry serves from the transparency log: every record of its name in the latest signed checkpoint, every signature in them, every signer's authority and stated outcome by the rules, and every member served equal to its newest record's and to the rules' fold of them",
      )
      .argument("<did>", "did:reg:<network>:<type>:<name>[@<version>] (without @version, the latest)")
      .option(
        "--log-key <key>",
        "the log's verifier key to trust (default: REGISTRY_LOG_KEY, else the one the server publishes, which proves less)",
      )
      .option("--history", "also print the records about the DID, one line each, as registry history does")
      .option(
        "--moderator <did>",
        "accept moderation only when signed by this DID (repeatable; default: any signer the registry's signed log holds)",
        (did: string, dids: string[] = []) => [...dids, did],
      ),
  )
    .addHelpText("after", "\nExit code 6 when anything does not verify. docs/transparency.md says what is proved.")
    .action(async (did: string, options: VerifyOptions) => {
      const { runClientCommand } = await import("../client-command.js");
      const { provedServedEntry } = await import("../verified-history.js");
      const { createProgressLine } = await import("../progress-line.js");
      const { historyRecordJson, historyLines } = await import("../history-lines.js");
      const { belongsToHistory, historySubject, recordSubject } = await import("../../domain/record-subject.js");
      const { recordEntries } = await import("../../sdk/log-verifier.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
        const logKey = options.logKey ?? (context.env.REGISTRY_LOG_KEY || undefined);
        // On a terminal, stderr shows which step the proof is at.
        const progress = createProgressLine(context);
        const { served, history } = await provedServedEntry(client, did, logKey, options.moderator, progress.update).finally(() =>
          progress.end(),
        );
        const versioned = served.entryDid;
        const newest = history.records
          .filter((record) => recordEntries(record.record).some((entry) => entry.entryDid === versioned))
          .at(-1)!;
        const { record } = newest;
        const state = recordEntries(record).find((entry) => entry.entryDid === versioned) ?? {};
        const { checkpoint } = history;
        const asked = historySubject(did);
        const timeline = "error" in asked ? [] : history.records.filter((entry) => belongsToHistory(recordSubject(entry.record), asked));
        if (!history.pinned)
          context.stderr`registry: the log key came from the server itself; pin it with --log-key or REGISTRY_LOG_KEY:\n  ${history.logKey}\n`;
        if (json) {
          // The API's names: the newest record as a HistoryRecord, the checkpoint as GetEntryHistory
          // answers it, the key as GetLogKey's verifierKey.
          printJson({
            verified: true,
            entryDid: versioned,
            ...historyRecordJson(newest),
            checkpoint: checkpoint.note,
            treeSize: String(checkpoint.treeSize),
            origin: checkpoint.origin,
            verifierKey: history.logKey,
            pinned: history.pinned,
            ...(options.history === true ? { history: timeline.map(historyRecordJson) } : {}),
          });
          return;
        }
        const status = String(state.status ?? "active");
        if (status === "revoked") context.stdout`verified ${versioned} (revoked: ${state.revocationReason ?? ""})\n`;
        else if (status !== "active") context.stdout`verified ${versioned} (${status})\n`;
        else context.stdout`verified ${versioned}\n`;
        context.stdout`  record      ${record.index} (${record.kind}) in the checkpoint of size ${checkpoint.treeSize} of ${checkpoint.origin}\n`;
        context.stdout`  signatures  the checkpoint's, and every one in the ${history.records.length} records of its name\n`;
        context.stdout`  rules       every record's signer had the authority, and states the outcome, the rules give\n`;
        context.stdout`  served      every member resolve serves is its newest record's, and its state the fold of them\n`;
        if (options.history === true) context.stdout(historyLines(timeline));
      });
    });
}
