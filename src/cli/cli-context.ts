import { homedir } from "node:os";
import { join } from "node:path";
import { CliFailure, EXIT } from "./exit-codes.js";
import type { TerminalWriter } from "./terminal-writer.js";
import { ConfigError, registryUrlFrom } from "../config.js";

/** Where a command reads its settings and writes its output; main.ts builds it from the process. */
export interface CliContext {
  /**
   * The environment the CLI's client settings come from (REGISTRY_URL, with PORT for its default,
   * REGISTRY_ROOT_TOKEN, REGISTRY_SIGNING_KEY, REGISTRY_CONFIG_DIR, XDG_CONFIG_HOME). The server's
   * other settings are not read here: the server commands go through loadConfig.
   */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The only ways out: each escapes what came from outside (terminal-writer.ts). */
  readonly stdout: TerminalWriter;
  readonly stderr: TerminalWriter;
  /** Whether stderr is a terminal: progress lines are shown only then, unless asked for. */
  readonly stderrIsTty: boolean;
  /** Whether stdin is a terminal: a secret is read from stdin only when it is not. */
  readonly stdinIsTty: boolean;
  readStdin(): Promise<string>;
  /** The exit code the command's action chose. */
  exitCode: number;
}

/**
 * The registry's URL: --registry, else REGISTRY_URL, else this host's server on PORT
 * (http://127.0.0.1:8080 when PORT is unset), as config.ts reads it for every command; without a
 * trailing slash.
 */
export function registryUrl(flag: string | undefined, context: CliContext): string {
  const given = flag ?? fromEnvironment(context);
  if (!/^https?:\/\//.test(given) || !URL.canParse(given)) {
    throw new CliFailure(`"${given}" is not a registry URL (http://host:port or https://host)`, EXIT.usage);
  }
  return given.replace(/\/+$/, "");
}

function fromEnvironment(context: CliContext): string {
  try {
    return registryUrlFrom(context.env);
  } catch (error) {
    if (error instanceof ConfigError) throw new CliFailure(error.message, EXIT.usage);
    throw error;
  }
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
