import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { runKey } from "./key.js";

const KEY_HELP =
  "the unpadded base64url of a 32-byte Ed25519 seed, or @<path> of a file holding it (or the JSON of key generate); default REGISTRY_SIGNING_KEY";

/** `registry sign entry|revoke`: print signed bodies without sending them. */
export function registerSignCommand(program: Command, context: CliContext): void {
  const group = program.command("sign").description("sign an entry or a revocation without sending it (for curl users)");
  group
    .command("entry")
    .description('print the entry with its "signature" set, ready for POST /v1/entries')
    .requiredOption("--file <entry.json|->", "the entry's JSON, or - for stdin")
    .option("--key <key>", KEY_HELP)
    .action(async (options: { file: string; key?: string }) => {
      context.exitCode = await runKey(["sign", "entry", `--file=${options.file}`, ...keyArgs(options.key)], context);
    });
  group
    .command("revoke")
    .description('print {"reason", "signature"}, the body of DELETE /v1/entries/{did}')
    .requiredOption("--did <did>", "the entry DID exactly as it will appear in the path (with or without @version)")
    .requiredOption("--reason <text>", "why; signed with the DID")
    .option("--key <key>", KEY_HELP)
    .action(async (options: { did: string; reason: string; key?: string }) => {
      const args = [`--did=${options.did}`, `--reason=${options.reason}`, ...keyArgs(options.key)];
      context.exitCode = await runKey(["sign", "revoke", ...args], context);
    });
}

function keyArgs(key: string | undefined): string[] {
  return key === undefined ? [] : [`--key=${key}`];
}
