import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
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
  /** The DID the token speaks for, as the registry answered (absent from files written before it was kept). */
  readonly subject?: string;
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
  await writeCredentialsFile(context, file);
}

/**
 * Forgets what is kept for `registry`; false when nothing was. The file goes once it holds no
 * registry, so no root token is left behind on disk.
 */
export async function removeCredentials(context: CliContext, registry: string): Promise<boolean> {
  const file = await readCredentialsFile(context);
  if (file.registries[registry] === undefined) return false;
  delete file.registries[registry];
  if (Object.keys(file.registries).length === 0) await rm(credentialsPath(context), { force: true });
  else await writeCredentialsFile(context, file);
  return true;
}

async function writeCredentialsFile(context: CliContext, file: CredentialsFile): Promise<void> {
  const directory = configDirectory(context);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  await chmod(directory, 0o700);
  const path = credentialsPath(context);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
}

/** What a kept token keeps of the registry's answer to an exchange: all of it. */
export function cachedToken(issued: { accessToken: string; expiresAt: string; scopes: string[]; subject: string }): CachedAccessToken {
  return { accessToken: issued.accessToken, expiresAt: issued.expiresAt, scopes: issued.scopes, subject: issued.subject };
}

/**
 * An access token carrying `scope` for a write: a cached one that is not near expiry, else a new one
 * exchanged with the cached root token through the SDK (and cached). Without a login for this
 * registry, REGISTRY_ROOT_TOKEN is exchanged for one, used for this command and not kept. Exit
 * code 4 when there is neither.
 */
export async function accessTokenFor(context: CliContext, registry: string, client: RegistryClient, scope: string): Promise<string> {
  const credentials = await readCredentials(context, registry);
  if (credentials === undefined) {
    const rootToken = context.env.REGISTRY_ROOT_TOKEN?.trim();
    if (rootToken) return (await client.issueToken(rootToken, { scopes: [scope] })).accessToken;
    throw new CliFailure(
      `not logged in to ${registry}: run "registry login --registry ${registry}" first, or set REGISTRY_ROOT_TOKEN`,
      EXIT.auth,
    );
  }
  const now = Date.now();
  const fresh = credentials.accessTokens.filter((token) => isFresh(token, now));
  const usable = fresh.find((token) => token.scopes.some((held) => covers(held, scope)));
  if (usable !== undefined) return usable.accessToken;
  const issued = await client.issueToken(credentials.rootToken, { scopes: [scope] });
  await saveCredentials(context, registry, { rootToken: credentials.rootToken, accessTokens: [...fresh, cachedToken(issued)] });
  return issued.accessToken;
}

/** Whether a kept token is good for a write that starts at `now`: not within a minute of its expiry. */
export function isFresh(token: CachedAccessToken, now: number): boolean {
  return Date.parse(token.expiresAt) - EXPIRY_MARGIN_MS > now;
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
