import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RegistryClient } from "../sdk/registry-client.js";
import { configDirectory, type CliContext } from "./cli-context.js";
import { CliFailure, EXIT } from "./exit-codes.js";

/** An access token `registry login` or a write obtained, kept until it nears expiry. */
export interface CachedAccessToken {
  readonly accessToken: string;
  /** RFC 3339, as the registry answered. */
  readonly expiresAt: string;
  readonly scopes: readonly string[];
}

/** What the CLI keeps for one registry: the root token and the access tokens exchanged for it. */
export interface RegistryCredentials {
  readonly rootToken: string;
  readonly accessTokens: readonly CachedAccessToken[];
}

interface CredentialsFile {
  registries: Record<string, RegistryCredentials>;
}

/** A cached token is replaced this long before it expires, so a write never starts with a token about to lapse. */
const EXPIRY_MARGIN_MS = 60_000;

/** The file holding every registry's credentials, in the user's config directory. */
export function credentialsPath(context: CliContext): string {
  return join(configDirectory(context), "credentials.json");
}

/** The credentials kept for `registry`, or undefined when the user has not logged in to it. */
export async function readCredentials(context: CliContext, registry: string): Promise<RegistryCredentials | undefined> {
  return (await readCredentialsFile(context)).registries[registry];
}

/**
 * Keeps `credentials` for `registry`. The directory is made 0700 and the file 0600 (written to a
 * temporary file first, so an interrupted write never leaves half a file).
 */
export async function saveCredentials(context: CliContext, registry: string, credentials: RegistryCredentials): Promise<void> {
  const file = await readCredentialsFile(context);
  file.registries[registry] = credentials;
  const directory = configDirectory(context);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  await chmod(directory, 0o700);
  const path = credentialsPath(context);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
}

/**
 * An access token carrying `scope` for a write: a cached one that is not near expiry, else a new one
 * exchanged with the cached root token through the SDK (and cached). Exit code 4 when there is no
 * login for this registry.
 */
export async function accessTokenFor(context: CliContext, registry: string, client: RegistryClient, scope: string): Promise<string> {
  const credentials = await readCredentials(context, registry);
  if (credentials === undefined) {
    throw new CliFailure(`not logged in to ${registry}: run "registry login --registry ${registry}" first`, EXIT.auth);
  }
  const now = Date.now();
  const fresh = credentials.accessTokens.filter((token) => Date.parse(token.expiresAt) - EXPIRY_MARGIN_MS > now);
  const usable = fresh.find((token) => token.scopes.some((held) => covers(held, scope)));
  if (usable !== undefined) return usable.accessToken;
  const issued = await client.issueToken(credentials.rootToken, { scopes: [scope] });
  const cached = { accessToken: issued.accessToken, expiresAt: issued.expiresAt, scopes: issued.scopes };
  await saveCredentials(context, registry, { rootToken: credentials.rootToken, accessTokens: [...fresh, cached] });
  return issued.accessToken;
}

/** Whether a token holding `held` may do what `needed` allows (registry.publish.* covers every type). */
function covers(held: string, needed: string): boolean {
  return held === needed || (held === "registry.publish.*" && needed.startsWith("registry.publish."));
}

async function readCredentialsFile(context: CliContext): Promise<CredentialsFile> {
  const path = credentialsPath(context);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { registries: {} };
    throw new CliFailure(`cannot read ${path}: ${(error as Error).message}`, EXIT.refused);
  }
  try {
    const parsed = JSON.parse(text) as Partial<CredentialsFile>;
    return { registries: { ...parsed.registries } };
  } catch {
    throw new CliFailure(`${path} is not JSON; remove it and log in again`, EXIT.refused);
  }
}
