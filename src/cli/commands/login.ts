import type { Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { withClientOptions, type ClientOptions } from "../client-options.js";
import { cachedToken, credentialsPath, saveCredentials } from "../credentials-store.js";
import { CliFailure, EXIT } from "../exit-codes.js";

interface LoginOptions extends ClientOptions {
  readonly rootToken?: string;
  readonly scopes: string;
}

/** `registry login`: exchanges a root token for an access token and keeps both for later writes. */
export function registerLoginCommand(program: Command, context: CliContext): void {
  withClientOptions(
    program
      .command("login")
      .description(
        "exchange a root token for an access token and keep both in the user's config file (mode 0600), " +
          "where publish and revoke find them; they exchange again when the access token expires or lacks a scope",
      )
      .option("--root-token <token>", "the root token (default: REGISTRY_ROOT_TOKEN, else read from stdin when it is not a terminal)")
      .option("--scopes <a,b>", "scopes of the access token asked for now (comma-separated)", "registry.publish.skill"),
  )
    .addHelpText(
      "after",
      "\nCredentials go to $REGISTRY_CONFIG_DIR, else $XDG_CONFIG_HOME/open-registry, else ~/.config/open-registry\n" +
        "(credentials.json, one entry per registry URL).",
    )
    .action(async (options: LoginOptions) => {
      const { runClientCommand } = await import("../client-command.js");
      context.exitCode = await runClientCommand(options, context, async ({ client, registry, json, printJson }) => {
        const rootToken = await rootTokenOf(options, context);
        const scopes = options.scopes
          .split(",")
          .map((scope) => scope.trim())
          .filter((scope) => scope !== "");
        const issued = await client.issueToken(rootToken, { scopes });
        await saveCredentials(context, registry, { rootToken, accessTokens: [cachedToken(issued)] });
        const file = credentialsPath(context);
        if (json) {
          printJson({ registry, subject: issued.subject, scopes: issued.scopes, expiresAt: issued.expiresAt, credentialsFile: file });
        } else {
          context.stdout`logged in to ${registry} as ${issued.subject} (${issued.scopes.join(", ")}); credentials in ${file}\n`;
        }
      });
    });
}

async function rootTokenOf(options: LoginOptions, context: CliContext): Promise<string> {
  const given = options.rootToken ?? (context.env.REGISTRY_ROOT_TOKEN || undefined);
  if (given !== undefined) return given.trim();
  if (context.stdinIsTty) {
    throw new CliFailure("a root token is needed: --root-token, REGISTRY_ROOT_TOKEN, or on stdin", EXIT.usage);
  }
  const piped = (await context.readStdin()).trim();
  if (piped === "") throw new CliFailure("stdin held no root token", EXIT.usage);
  return piped;
}
