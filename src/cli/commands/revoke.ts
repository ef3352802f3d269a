import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";
import { accessTokenFor } from "../credentials-store.js";
import { CliFailure, EXIT } from "../exit-codes.js";
import { signingKeyOf, SIGNING_KEY_HELP } from "../signing-key.js";

interface RevokeOptions extends ClientOptions {
  readonly reason: string;
  readonly key?: string;
}

/** `registry revoke <did>[@version] --reason <text>`. */
export function registerRevokeCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("revoke")
      .description("revoke one version (did@version), or every active version of an entry; signed with the key")
      .argument("<did>", "did:reg:<network>:<type>:<name>[@<version>]")
      .requiredOption("--reason <text>", "why, kept with the entry and signed")
      .option("--key <key>", SIGNING_KEY_HELP),
  ).action(async (did: string, options: RevokeOptions) => {
    const { entryJson, runClientCommand } = await import("../client-command.js");
    context.exitCode = await runClientCommand(options, context, async ({ client, registry, json, printJson }) => {
      const entryType = did.split(":")[3];
      if (entryType === undefined || entryType === "") {
        throw new CliFailure(`${did} is not an entry DID (did:reg:<network>:<type>:<name>[@<version>])`, EXIT.usage);
      }
      const key = await signingKeyOf(options.key, context);
      const token = await accessTokenFor(context, registry, client, `registry.publish.${entryType}`);
      const revoked = await client.revoke(did, { reason: options.reason, key, token });
      if (json) printJson({ entries: revoked.map(entryJson) });
      else for (const entry of revoked) context.stdout`revoked ${entry.entryDid}\n`;
    });
  });
}
