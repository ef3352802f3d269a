import type { KeyPair } from "../sdk/signing.js";
import type { CliContext } from "./cli-context.js";
import { CliFailure, EXIT } from "./exit-codes.js";

/** The --key help shared by the commands that sign. */
export const SIGNING_KEY_HELP =
  "the signing key: base64url of a 32-byte Ed25519 seed, or @<path> of a file holding it or key generate's JSON (default: REGISTRY_SIGNING_KEY)";

/** The key of --key or REGISTRY_SIGNING_KEY, loaded as `registry sign` loads it; usage or refusal exit codes. */
export async function signingKeyOf(flag: string | undefined, context: CliContext): Promise<KeyPair> {
  const { loadSigningKey, UsageError } = await import("./key-commands.js");
  try {
    return await loadSigningKey(flag, context.env);
  } catch (error) {
    if (!(error instanceof Error)) throw error;
    throw new CliFailure(error.message, error instanceof UsageError ? EXIT.usage : EXIT.refused);
  }
}
