import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Command } from "commander";
import type { EntryInput } from "../../sdk/registry-client.js";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";
import { contentHashOf } from "../content-hash.js";
import { accessTokenFor } from "../credentials-store.js";
import { CliFailure, EXIT } from "../exit-codes.js";
import { signingKeyOf, SIGNING_KEY_HELP } from "../signing-key.js";

interface PublishOptions extends ClientOptions {
  readonly content?: string;
  readonly key?: string;
  readonly dryRun?: boolean;
}

/** `registry publish <manifest>`: fills in what can be computed, signs and publishes an entry. */
export function registerPublishCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("publish")
      .description("sign and publish an entry, with the access token of `registry login` (else REGISTRY_ROOT_TOKEN)")
      .argument("<manifest>", "a JSON file with the entry's fields, or a directory holding registry.json")
      .option("--content <file|dir>", "compute contentHash from this file, or directory (see docs/cli.md for how)")
      .option("--key <key>", SIGNING_KEY_HELP)
      .option("--dry-run", "check the entry against the registry's rules and sign it, print the signed entry, and send nothing"),
  )
    .addHelpText(
      "after",
      "\npublishedAt is set to now (to the second) when the manifest has none, and publisherDid to the key's DID.\n" +
        "--dry-run needs no login and no registry: whether the registry takes the entry type, and whether the\n" +
        "name and version are free, only publishing says.",
    )
    .action(async (manifest: string, options: PublishOptions) => {
      const { entryJson, runClientCommand } = await import("../client-command.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, registry, json, printJson }) => {
        const key = await signingKeyOf(options.key, context);
        const entry = await entryOfManifest(manifest, options.content, key.did);
        if (options.dryRun === true) {
          const { dryRunEntry } = await import("../publish-dry-run.js");
          printJson(await dryRunEntry(entry, key));
          if (!json) context.stderr`dry run: ${entry.entryDid} is valid and signed; nothing was sent\n`;
          return;
        }
        const token = await accessTokenFor(context, registry, client, `registry.publish.${entry.entryType}`);
        const stored = await client.publish(entry, { key, token });
        if (json) printJson(entryJson(stored));
        else context.stdout`published ${stored.entryDid} (sequence ${stored.sequence})\n`;
      });
    });
}

/** The entry a manifest describes, with contentHash, publishedAt and publisherDid filled in when asked or absent. */
async function entryOfManifest(manifest: string, content: string | undefined, keyDid: string): Promise<EntryInput> {
  const file = (await isDirectory(manifest)) ? join(manifest, "registry.json") : manifest;
  const fields = parseManifest(await readText(file), file);
  if (content !== undefined) {
    fields.contentHash = await contentHashOf(content).catch((error: Error) => {
      throw new CliFailure(`--content: ${error.message}`, EXIT.refused);
    });
  }
  fields.publishedAt ??= new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  fields.publisherDid ??= keyDid;
  return fields as unknown as EntryInput;
}

function parseManifest(contents: string, file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(contents);
  } catch (error) {
    throw new CliFailure(`${file}: not JSON (${(error as Error).message})`, EXIT.refused);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new CliFailure(`${file}: must hold a JSON object with the entry's fields`, EXIT.refused);
  }
  return parsed as Record<string, unknown>;
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() === true;
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new CliFailure(`cannot read ${path}: ${(error as Error).message}`, EXIT.refused);
  }
}
