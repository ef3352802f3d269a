import type { JsonObject } from "@bufbuild/protobuf";
import type { CliContext } from "../cli-context.js";
import { entryJson, runClientCommand } from "../client-command.js";
import { accessTokenFor } from "../credentials-store.js";
import { CliFailure, EXIT } from "../exit-codes.js";
import { signingKeyOf } from "../signing-key.js";
import { terminal } from "../terminal-text.js";
import type { EntryActionCommand, EntryActionOptions } from "./entry-action-table.js";

/**
 * Runs one command of ENTRY_ACTION_COMMANDS: signs the action with the key, sends it with a token
 * of the scope it needs, and prints each version addressed in its new state. Loaded only when such
 * a command runs, since it loads the SDK.
 */
export function runEntryAction(
  command: EntryActionCommand,
  did: string,
  options: EntryActionOptions,
  context: CliContext,
): Promise<number> {
  return runClientCommand(options, context, async ({ client, registry, json, printJson }) => {
    const entryType = entryTypeOf(did);
    if (command.nameOnly && did.includes("@")) {
      throw new CliFailure(`${command.name} acts on a name: give the bare DID ${did.split("@")[0]}, without @version`, EXIT.usage);
    }
    const key = await signingKeyOf(options.key, context);
    const token = await accessTokenFor(context, registry, client, command.scope(entryType));
    const entries = (await command.send(client, did, { ...options, key, token })).map(entryJson);
    if (json) printJson({ entries });
    else for (const entry of entries) context.stdout(stateLine(command.done, entry));
  });
}

/** `deprecated did:…@1.2.0 (replacement did:…@1.3.0)`; the status too when the word alone does not say it. */
function stateLine(done: string, entry: JsonObject): string {
  const replacement = done === "deprecated" ? (entry.deprecation as JsonObject | undefined)?.replacement : undefined;
  const details = [
    ...(replacement ? [terminal`replacement ${replacement}`] : []),
    ...(entry.status === done ? [] : [terminal`status ${entry.status}`]),
  ];
  return `${terminal`${done} ${entry.entryDid}`}${details.length > 0 ? ` (${details.join("; ")})` : ""}\n`;
}

/** The entry type of an entry DID, which names the publish scope; a usage failure when there is none. */
function entryTypeOf(did: string): string {
  const entryType = did.split(":")[3];
  if (entryType === undefined || entryType === "") {
    throw new CliFailure(`${did} is not an entry DID (did:reg:<network>:<type>:<name>[@<version>])`, EXIT.usage);
  }
  return entryType;
}
