import { homedir } from "node:os";
import { join } from "node:path";
import { CliFailure, EXIT } from "./exit-codes.js";

/** Where a command reads its settings and writes its output; main.ts builds it from the process. */
export interface CliContext {
  /**
   * The environment the CLI's client settings come from (REGISTRY_URL, REGISTRY_ROOT_TOKEN,
   * REGISTRY_SIGNING_KEY, REGISTRY_CONFIG_DIR, XDG_CONFIG_HOME). The server's settings are not
   * read here: the server commands go through loadConfig.
   */
  readonly env: Readonly<Record<string, string | undefined>>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stderr is a terminal: progress lines are shown only then, unless asked for. */
  readonly stderrIsTty: boolean;
  /** Whether stdin is a terminal: a secret is read from stdin only when it is not. */
  readonly stdinIsTty: boolean;
  readStdin(): Promise<string>;
  /** The exit code the command's action chose. */
  exitCode: number;
}

/** The registry a client command talks to when neither --registry nor REGISTRY_URL says. */
export const DEFAULT_REGISTRY_URL = "http://127.0.0.1:8080";

/** The registry's URL: --registry, else REGISTRY_URL, else the local default; without a trailing slash. */
export function registryUrl(flag: string | undefined, context: CliContext): string {
  const given = flag ?? (context.env.REGISTRY_URL || undefined) ?? DEFAULT_REGISTRY_URL;
  if (!/^https?:\/\//.test(given) || !URL.canParse(given)) {
    throw new CliFailure(`"${given}" is not a registry URL (http://host:port or https://host)`, EXIT.usage);
  }
  return given.replace(/\/+$/, "");
}

/**
 * The directory of the CLI's user configuration: REGISTRY_CONFIG_DIR, else
 * $XDG_CONFIG_HOME/open-registry, else ~/.config/open-registry.
 */
export function configDirectory(context: CliContext): string {
  const { REGISTRY_CONFIG_DIR, XDG_CONFIG_HOME } = context.env;
  if (REGISTRY_CONFIG_DIR) return REGISTRY_CONFIG_DIR;
  return join(XDG_CONFIG_HOME || join(homedir(), ".config"), "open-registry");
}
