import { toJson, type JsonObject } from "@bufbuild/protobuf";
import { EntrySchema, EntryVersionSchema, type Entry, type EntryVersion } from "../../gen/registry/v1/entry_pb.js";
import { RegistryClientError } from "../sdk/client-error.js";
import { createRegistryClient } from "../sdk/node.js";
import type { RegistryClient } from "../sdk/registry-client.js";
import { registryUrl, type CliContext } from "./cli-context.js";
import type { ClientOptions } from "./client-options.js";
import { entryMarks, markLine } from "./entry-marks.js";
import { CliFailure, EXIT, exitCodeOf } from "./exit-codes.js";
import { terminal, terminalText } from "./terminal-text.js";

/** What a client command's body gets: the client, the registry's URL and how to print. */
export interface ClientCall {
  readonly client: RegistryClient;
  readonly registry: string;
  readonly json: boolean;
  /** Prints a value as one JSON document on stdout; the writer escapes what JSON leaves raw (C1, bidi) as \uXXXX. */
  printJson(value: unknown): void;
}

/**
 * Runs a command's body with a client of the chosen registry, and turns its failure into the
 * exit code and the message (human, or JSON with --json) the failure means.
 */
export async function runClientCommand(
  options: ClientOptions,
  context: CliContext,
  body: (call: ClientCall) => Promise<number> | Promise<void>,
): Promise<number> {
  const json = options.json === true;
  let registry: string;
  try {
    registry = registryUrl(options.registry, context);
  } catch (error) {
    return reportFailure(error, "", json, context);
  }
  const client = createRegistryClient({ baseUrl: registry, transport: options.transport });
  try {
    const code = await body({
      client,
      registry,
      json,
      printJson: (value) => context.stdout(`${JSON.stringify(value, null, 2)}\n`),
    });
    return code ?? EXIT.ok;
  } catch (error) {
    return reportFailure(error, registry, json, context);
  } finally {
    client.close();
  }
}

/** Prints a failure on stderr and returns its exit code; rethrows what is not a known failure. */
export function reportFailure(error: unknown, registry: string, json: boolean, context: CliContext): number {
  if (error instanceof CliFailure) {
    if (json) context.stderr(`${JSON.stringify({ error: { code: "cli", message: error.message } })}\n`);
    else context.stderr`registry: ${error.message}\n`;
    return error.exitCode;
  }
  const errno = error as NodeJS.ErrnoException;
  if (errno instanceof Error && typeof errno.code === "string" && errno.syscall !== undefined) {
    // A local file the command needed (the credentials file, say) could not be read or written.
    context.stderr`registry: ${errno.message}\n`;
    return EXIT.refused;
  }
  if (!(error instanceof RegistryClientError)) throw error;
  const unreachable = error.code === "unknown" && isNetworkFailure(error.cause);
  const message = unreachable ? `cannot reach the registry at ${registry} (${networkReason(error.cause)})` : error.message;
  if (json) {
    context.stderr(`${JSON.stringify({ error: { code: error.code, message, violations: error.violations } })}\n`);
  } else {
    // The registry's message of a refused request lists its violations; each then gets its own line.
    const listed = error.violations.map(({ field, description }) => `${field}: ${description}`);
    const onlyViolations = listed.length > 0 && message === listed.join("; ");
    if (unreachable) context.stderr`registry: ${message}\n`;
    else if (onlyViolations) context.stderr`registry: ${error.code}:\n`;
    else context.stderr`registry: ${error.code}: ${message}\n`;
    for (const { field, description } of error.violations) context.stderr`  ${field}: ${description}\n`;
  }
  return exitCodeOf(error.code);
}

/** A fetch that got no answer: TypeError("fetch failed") with the socket error as its cause. */
function isNetworkFailure(cause: unknown): boolean {
  let current: unknown = cause;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current.message === "fetch failed" || typeof (current as NodeJS.ErrnoException).code === "string") return true;
    current = current.cause;
  }
  return false;
}

function networkReason(cause: unknown): string {
  // The socket's error code (ECONNREFUSED) when there is one, else the innermost message.
  let current: unknown = cause;
  let innermost = "no answer";
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === "string") return code;
    innermost = current.message;
    current = current.cause;
  }
  return innermost;
}

/** An entry in its proto3 JSON form, as the REST API answers it. */
export function entryJson(entry: Entry): JsonObject {
  return toJson(EntrySchema, entry) as JsonObject;
}

export function versionJson(version: EntryVersion): JsonObject {
  return toJson(EntryVersionSchema, version) as JsonObject;
}

/** An entry for people: the fields that matter, one per line, then each mark with its reason. */
export function describeEntry(entry: Entry): string {
  const fields = entryJson(entry);
  const lines = [
    terminal`${fields.entryDid}  ${statusName(fields.status)}`,
    terminal`  publisher   ${fields.publisherDid}`,
    terminal`  published   ${fields.publishedAt}`,
    terminal`  content     ${fields.contentHash}`,
  ];
  if (fields.description) lines.push(terminal`  description ${fields.description}`);
  if (Array.isArray(fields.tags) && fields.tags.length > 0) lines.push(`  tags        ${fields.tags.map(terminalText).join(", ")}`);
  lines.push(...entryMarks(fields).map(markLine));
  return `${lines.join("\n")}\n`;
}

/** `ENTRY_STATUS_REVOKED` → `revoked`. */
export function statusName(status: unknown): string {
  return typeof status === "string" ? status.replace(/^ENTRY_STATUS_/, "").toLowerCase() : "active";
}
