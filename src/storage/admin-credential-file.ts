import { chmod, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensurePrivateDataDirectory } from "./data-directory.js";

/**
 * Where a server leaves its admin credential for the operator's CLI: a file in the data
 * directory, readable by the server's own account alone.
 */

export const ADMIN_CREDENTIAL_FILE = "admin-credential";

/** The credential file of a data directory. */
export function adminCredentialPath(dataDir: string): string {
  return join(dataDir, ADMIN_CREDENTIAL_FILE);
}

/**
 * Writes `credential` to <dataDir>/admin-credential with mode 0600, in a directory made 0700 (and
 * refused if another account owns it; see data-directory.ts). The file is replaced by a rename, so
 * a reader sees the old credential or the new one, never half of one, and never a moment with
 * looser permissions.
 */
export async function writeAdminCredential(dataDir: string, credential: string): Promise<string> {
  await ensurePrivateDataDirectory(dataDir);
  const path = adminCredentialPath(dataDir);
  const staging = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(staging, `${credential}\n`, { mode: 0o600, flag: "w" });
    // A staging file left by a crashed process with the same pid keeps its old mode through "w".
    await chmod(staging, 0o600);
    await rename(staging, path);
  } catch (error) {
    await rm(staging, { force: true });
    throw error;
  }
  return path;
}

/**
 * Removes the credential file if it still holds this server's credential (`isOwn`), and leaves
 * one that another server on the same directory has written since.
 */
export async function removeAdminCredential(dataDir: string, isOwn: (credential: string) => boolean): Promise<void> {
  const current = await readAdminCredential(dataDir);
  if (current !== undefined && isOwn(current)) await rm(adminCredentialPath(dataDir), { force: true });
}

/** The credential in <dataDir>/admin-credential, or undefined when there is no such file. */
export async function readAdminCredential(dataDir: string): Promise<string | undefined> {
  try {
    return (await readFile(adminCredentialPath(dataDir), "utf8")).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
