import type { Dirent } from "node:fs";
import { chmod, lstat, mkdir, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../config.js";

/**
 * The data directory is the server's account's alone, as Postgres demands of its own: the embedded
 * database (its tables and its WAL) holds the token issuer's private key, the log's signing key
 * and the cursor secret, and the directory holds the admin credential. PGlite does not see to it:
 * the files it writes get the modes its WASM side asks for (0666 for what initdb writes, kept when
 * a WAL segment is recycled), whatever the process's umask.
 */
const DATA_DIRECTORY_MODE = 0o700;

/** Read, write and search permission for the file's group and for everyone else. */
const GROUP_AND_OTHER_BITS = 0o077;

const PERMISSION_BITS = 0o777;

/**
 * Creates `dataDir` (mode 0700) if it is missing; otherwise refuses one that another account owns
 * and makes it 0700. Refusals are ConfigErrors that say how to fix the directory.
 */
export async function ensurePrivateDataDirectory(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: DATA_DIRECTORY_MODE }).catch((error: unknown) => {
    throw unusable(dataDir, error);
  });
  const directory = await stat(dataDir);
  if (!directory.isDirectory()) throw notADirectory(dataDir);
  // Windows has no owner ids, nor modes beyond read-only.
  const account = process.geteuid?.();
  if (account !== undefined && directory.uid !== account) throw ownedByAnother(dataDir, directory.uid, account);
  if ((directory.mode & PERMISSION_BITS) !== DATA_DIRECTORY_MODE) await restrict(dataDir, dataDir, DATA_DIRECTORY_MODE);
}

/**
 * Takes group and other permissions off everything under `dataDir`. Symbolic links are left
 * alone: their own modes mean nothing, and what they point at is not the registry's.
 */
export async function makeDataDirectoryContentsPrivate(dataDir: string): Promise<void> {
  const entries = await readdir(dataDir, { withFileTypes: true, recursive: true });
  for (const entry of entries) {
    if (entry.isSymbolicLink()) continue;
    await makePrivate(dataDir, entryPath(entry));
  }
}

function entryPath(entry: Dirent): string {
  return join(entry.parentPath, entry.name);
}

async function makePrivate(dataDir: string, path: string): Promise<void> {
  const mode = await lstat(path).then(
    (info) => info.mode,
    (error: unknown) => {
      // Gone since the listing: nothing left to protect.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    },
  );
  if (mode === undefined || (mode & GROUP_AND_OTHER_BITS) === 0) return;
  await restrict(dataDir, path, mode & 0o7777 & ~GROUP_AND_OTHER_BITS);
}

async function restrict(dataDir: string, path: string, mode: number): Promise<void> {
  await chmod(path, mode).catch((error: unknown) => {
    throw unrestrictable(dataDir, path, error);
  });
}

const WHY = "it holds the database's secrets, so the registry starts only when it and everything in it are its own account's alone";

function ownedByAnother(dataDir: string, owner: number, account: number): ConfigError {
  return new ConfigError(
    `REGISTRY_DATA_DIR: ${dataDir} belongs to uid ${owner}, not to uid ${account} that the registry runs as; ${WHY}: ` +
      `run the registry as its owner, or give it the directory (chown -R ${account} ${dataDir})`,
  );
}

function unrestrictable(dataDir: string, path: string, error: unknown): ConfigError {
  const account = process.geteuid?.();
  const chown = account === undefined ? "" : `chown -R ${account} ${dataDir} && `;
  return new ConfigError(
    `REGISTRY_DATA_DIR: cannot take group and other access off ${path} (${errorCode(error)}); ${WHY}: ` +
      `make everything in it the registry's account's and private to it (${chown}chmod -R go-rwx ${dataDir})`,
  );
}

function unusable(dataDir: string, error: unknown): ConfigError {
  const code = errorCode(error);
  // mkdir's answers when the path, or a parent on it, is a file.
  if (code === "EEXIST" || code === "ENOTDIR") return notADirectory(dataDir);
  return new ConfigError(`REGISTRY_DATA_DIR: cannot create ${dataDir} (${code})`);
}

function notADirectory(dataDir: string): ConfigError {
  return new ConfigError(`REGISTRY_DATA_DIR: ${dataDir} is not a directory`);
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}
