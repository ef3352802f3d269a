import type { Command } from "commander";
import { MIRROR_SETTING_OPTIONS } from "../../mirror/mirror-settings.js";
import type { CliContext } from "../cli-context.js";
import type { RunMirrorOptions } from "../mirror-command.js";

/**
 * `registry mirror --from <url>`: follows another registry's transparency log into this one's
 * database (DATABASE_URL, or the embedded REGISTRY_DATA_DIR), verifying everything it takes.
 */
export function registerMirrorCommand(program: Command, context: CliContext): void {
  const command = program
    .command("mirror")
    .description(
      "follow another registry's log into this database (DATABASE_URL or REGISTRY_DATA_DIR): every checkpoint signed by the pinned key and consistent with the last, every record's signatures and inclusion verified",
    )
    .requiredOption("--from <url>", "the registry to mirror, e.g. https://registry.example")
    .option(
      "--log-key <key>",
      "the source log's verifier key to trust (default: REGISTRY_LOG_KEY, else the one the source publishes, which proves less)",
    )
    .option(
      "--moderator <did>",
      "accept moderation only when signed by this DID (repeatable; default: any signer the source's signed log holds)",
      (did: string, dids: string[] = []) => [...dids, did],
    )
    .option("--once", "catch up once and exit, instead of following")
    .option("--interval <ms>", "how often to look for a new checkpoint while following", "2000")
    .option("--json", "one JSON object per step on stdout");
  for (const setting of MIRROR_SETTING_OPTIONS) command.option(setting.flag, `${setting.description} (default: ${setting.default})`);
  command
    .addHelpText(
      "after",
      '\nExit code 6 when the source\'s log does not verify (nothing unproved is written), 5 when it cannot be read in time. SIGINT or SIGTERM stops within seconds, keeping every batch proved; with --once, before caught up, the exit code is 130 or 143. docs/feed.md, "Mirroring".',
    )
    .action(async (options: RunMirrorOptions) => {
      const { runMirror } = await import("../mirror-command.js");
      context.exitCode = await runMirror(options, context);
    });
}
