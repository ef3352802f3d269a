import { createKnexAuthRepository } from "../storage/knex-auth-repository.js";
import { loadIssuerKeySet, rotateIssuerKey } from "../auth/issuer-keys.js";
import type { RegistryConfig } from "../config.js";
import { migrateToLatest, openDatabase } from "../storage/database.js";
import { terminal } from "./terminal-text.js";

export type IssuerKeyCommandConfig = Pick<RegistryConfig, "databaseUrl" | "dataDir" | "tokenMaxTtlSeconds">;

export const ISSUER_KEY_USAGE = `Usage:
  registry issuer-key list     the keys in the JWKS (kid, current or retired)
  registry issuer-key rotate   make a new signing key current; the old one keeps verifying the
                               tokens it signed until they expire
`;

/** Runs `registry issuer-key ...` on the configured database; returns the exit code. */
export async function runIssuerKeyCommand(
  args: string[],
  config: IssuerKeyCommandConfig,
  io: { stdout(text: string): void; stderr(text: string): void },
): Promise<number> {
  const [command] = args;
  if (command !== "list" && command !== "rotate") {
    io.stderr(ISSUER_KEY_USAGE);
    return 2;
  }
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    await migrateToLatest(database);
    const options = { repository: createKnexAuthRepository(database.knex), tokenMaxTtlSeconds: config.tokenMaxTtlSeconds };
    if (command === "rotate") {
      const key = await rotateIssuerKey(options);
      io.stdout(terminal`${key.kid}\n`);
      return 0;
    }
    const keys = await loadIssuerKeySet(options);
    for (const key of keys.publicKeys) {
      io.stdout(terminal`${key.kid}\t${key.kid === keys.signingKey.kid ? "current" : "retired"}\n`);
    }
    return 0;
  } finally {
    await database.close();
  }
}
