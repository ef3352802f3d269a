import { Option, type Command } from "commander";
import type { NodeTransportKind } from "../sdk/node.js";

/** The options every command that talks to a registry takes. */
export interface ClientOptions {
  readonly registry?: string;
  readonly json?: boolean;
  readonly transport?: NodeTransportKind;
}

/** The protocols the SDK's Node client speaks. */
const TRANSPORTS: readonly NodeTransportKind[] = ["connect", "connect-binary", "grpc-web", "grpc"];

/**
 * Adds --registry, --json and --transport to a command. Kept apart from client-command.ts, which
 * loads the SDK: registering the commands must not, so `registry serve` starts without it.
 */
export function withClientOptions(command: Command): Command {
  return withRegistryOptions(command).addOption(
    new Option("--transport <protocol>", "the protocol to speak").choices(TRANSPORTS).default("connect"),
  );
}

/** Adds --registry and --json: for the commands about a registry that do not call it (whoami, logout). */
export function withRegistryOptions(command: Command): Command {
  return command
    .option("--registry <url>", "the registry's URL (default: REGISTRY_URL, else http://127.0.0.1:$PORT, 8080 without PORT)")
    .option("--json", "print a JSON document on stdout (errors as JSON on stderr)");
}
