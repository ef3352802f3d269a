import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";

interface VerifyOptions extends ClientOptions {
  readonly logKey?: string;
}

/** `registry verify <did>[@version]`: the entry's state, proved from the transparency log. */
export function registerVerifyCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("verify")
      .description(
        "prove an entry version's current state from the transparency log: its record's inclusion in the latest signed checkpoint, the checkpoint's signature and the publisher's signature",
      )
      .argument("<did>", "did:reg:<network>:<type>:<name>[@<version>] (without @version, the latest)")
      .option(
        "--log-key <key>",
        "the log's verifier key to trust (default: REGISTRY_LOG_KEY, else the one the server publishes, which proves less)",
      ),
  )
    .addHelpText("after", "\nExit code 6 when anything does not verify. docs/transparency.md says what is proved.")
    .action(async (did: string, options: VerifyOptions) => {
      const { runClientCommand } = await import("../client-command.js");
      const { LogVerificationError } = await import("../../sdk/log-verifier.js");
      const { CliFailure, EXIT } = await import("../exit-codes.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, json, printJson }) => {
        const versioned = did.includes("@") ? did : (await client.resolve(did)).entryDid;
        const logKey = options.logKey ?? (context.env.REGISTRY_LOG_KEY || undefined);
        const proved = await client.proveEntry(versioned, { logKey }).catch((error: unknown) => {
          if (error instanceof LogVerificationError)
            throw new CliFailure(`${versioned} does not verify: ${error.message}`, EXIT.unverified);
          throw error;
        });
        const { record, checkpoint } = proved;
        if (!proved.pinned)
          context.stderr`registry: the log key came from the server itself; pin it with --log-key or REGISTRY_LOG_KEY:\n  ${proved.logKey}\n`;
        if (json) {
          printJson({
            verified: true,
            did: versioned,
            index: record.index,
            kind: record.kind,
            treeSize: checkpoint.treeSize,
            origin: checkpoint.origin,
            logKey: proved.logKey,
            pinned: proved.pinned,
            record,
          });
          return;
        }
        if (record.entry.status === "revoked") context.stdout`verified ${versioned} (revoked: ${record.entry.revocationReason ?? ""})\n`;
        else context.stdout`verified ${versioned}\n`;
        context.stdout`  record      ${record.index} (${record.kind}) in the checkpoint of size ${checkpoint.treeSize} of ${checkpoint.origin}\n`;
        context.stdout`  signatures  the checkpoint's, the publisher's${record.revocation?.signature ? " and the revocation's" : ""}\n`;
      });
    });
}
