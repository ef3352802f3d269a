import type { Command } from "commander";
import { registryUrl, type CliContext } from "../cli-context.js";
import { withRegistryOptions, type ClientOptions } from "../client-options.js";
import { credentialsPath, isFresh, readCredentials } from "../credentials-store.js";
import { CliFailure, EXIT } from "../exit-codes.js";

/**
 * `registry whoami`: what `registry login` keeps for a registry (the subject, and each kept access
 * token's scopes and expiry), read from the credentials file alone: nothing is sent.
 */
export function registerWhoamiCommand(program: Command, context: CliContext): void {
  withRegistryOptions(
    program
      .command("whoami")
      .description("show who the kept login speaks for on a registry: the subject, and each kept access token's scopes and expiry"),
  )
    .addHelpText("after", "\nReads the credentials file only; exit code 4 when there is no login for the registry.")
    .action(async (options: ClientOptions) => {
      const { reportFailure } = await import("../client-command.js");
      let registry = "";
      try {
        registry = registryUrl(options.registry, context);
        context.exitCode = await whoami(registry, options.json === true, context);
      } catch (error) {
        context.exitCode = reportFailure(error, registry, options.json === true, context);
      }
    });
}

async function whoami(registry: string, json: boolean, context: CliContext): Promise<number> {
  const credentials = await readCredentials(context, registry);
  if (credentials === undefined) {
    const fallback = context.env.REGISTRY_ROOT_TOKEN ? "; writes use REGISTRY_ROOT_TOKEN, which is set" : "";
    throw new CliFailure(`not logged in to ${registry}${fallback}`, EXIT.auth);
  }
  const tokens = credentials.accessTokens;
  // Every kept token has the root token's subject; a file from before subjects were kept has none.
  const subject = tokens.find((token) => token.subject !== undefined)?.subject;
  const credentialsFile = credentialsPath(context);
  if (json) {
    const accessTokens = tokens.map(({ scopes, expiresAt }) => ({ scopes, expiresAt }));
    context.stdout(`${JSON.stringify({ registry, subject, accessTokens, credentialsFile }, null, 2)}\n`);
    return EXIT.ok;
  }
  context.stdout`logged in to ${registry} as ${subject ?? "an unknown subject (log in again to see it)"}\n`;
  const now = Date.now();
  for (const token of tokens) {
    const state = isFresh(token, now) ? "expires" : "expired";
    context.stdout`  ${token.scopes.join(", ")}  ${state} ${token.expiresAt}\n`;
  }
  if (!tokens.some((token) => isFresh(token, now))) {
    context.stdout("  (no access token is fresh: the next write exchanges the kept root token for one)\n");
  }
  context.stdout`credentials in ${credentialsFile}\n`;
  return EXIT.ok;
}
