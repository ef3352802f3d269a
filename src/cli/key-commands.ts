import { readFile, writeFile } from "node:fs/promises";
import { text } from "node:stream/consumers";
import { parseArgs } from "node:util";
import { joinOptionValues } from "./option-values.js";
import { terminal } from "./terminal-text.js";
import { fieldSpec, PUBLISHER_FIELDS, type FieldKind } from "../domain/entry-fields.js";
import { ENTRY_PAYLOAD_TYPE_V2, type EntrySigningFields } from "../domain/signing-payload.js";
import {
  decodePrivateKey,
  encodeBase64url,
  encodePrivateKey,
  generateKeyPair,
  keyPairFromSeed,
  signEntry,
  signRevocation,
  type KeyPair,
} from "../sdk/signing.js";

/** Where the commands read and write; tests pass their own, the CLI the process's. */
export interface KeyCommandIo {
  stdout(text: string): void;
  stderr(text: string): void;
  readFile?(path: string): Promise<string>;
  readStdin?(): Promise<string>;
  env?: Readonly<Record<string, string | undefined>>;
}

export const KEY_COMMAND_USAGE = `Usage:
  registry key generate [--out <file>]
  registry sign entry  --key <key> --file <entry.json | ->
  registry sign revoke --key <key> --did <entry DID as addressed> --reason <text>

<key> is the unpadded base64url of a 32-byte Ed25519 seed, or @<path> of a file holding one
(or holding the JSON printed by "registry key generate"). Without --key, the environment variable
REGISTRY_SIGNING_KEY is used; prefer it or @<path>, since command lines end up in shell history.

"key generate --out <file>" writes the key to a new file of mode 0600 (it refuses to overwrite one)
and prints only the DID and public key; without --out the whole key is printed.
"sign entry" prints the entry with its "signature" field set, ready for POST /v1/entries.
"sign revoke" prints {"reason", "signature"}, the body of DELETE /v1/entries/{did}; give --did
exactly as it will appear in that path (with or without @version), since it is signed as given.
`;

const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Bad command line: answered with the usage text and exit code 2. */
export class UsageError extends Error {}
/** The command line was fine but the work failed (unreadable file, wrong key): exit code 1. */
export class CommandError extends Error {}

/**
 * Runs `registry key ...` and `registry sign ...`. `args` starts at the command word ("key" or
 * "sign"). Returns the process exit code instead of exiting, so it can run in-process.
 */
export async function runKeyCommand(args: string[], io: KeyCommandIo): Promise<number> {
  const [group, command, ...rest] = args;
  try {
    if (group === "key" && command === "generate") return await keyGenerate(rest, io);
    if (group === "sign" && command === "entry") return await signEntryCommand(rest, io);
    if (group === "sign" && command === "revoke") return await signRevokeCommand(rest, io);
    if (command === "--help" || command === "-h" || command === "help") return printUsage(io);
    throw new UsageError(`unknown command: ${[group, command].filter(Boolean).join(" ")}`);
  } catch (error) {
    return reportFailure(error, io);
  }
}

async function keyGenerate(args: string[], io: KeyCommandIo): Promise<number> {
  const { help, out } = parseOptions(args, { out: { type: "string" } });
  if (help) return printUsage(io);
  const key = await generateKeyPair();
  const whole = {
    did: key.did,
    privateKey: encodePrivateKey(key.privateKey),
    publicKey: encodeBase64url(key.publicKey),
  };
  if (out === undefined) {
    printJson(io, whole);
    return EXIT_OK;
  }
  await writeNewKeyFile(out, `${JSON.stringify(whole, null, 2)}\n`);
  printJson(io, { did: whole.did, publicKey: whole.publicKey, file: out });
  return EXIT_OK;
}

/**
 * Writes a private key to a file that must not exist yet, readable by its owner only: overwriting
 * a key file would orphan every name its DID owns (the registry ties a name to its first
 * publisher's key).
 */
async function writeNewKeyFile(path: string, contents: string): Promise<void> {
  try {
    await writeFile(path, contents, { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new CommandError(`${path} already exists; refusing to overwrite a key (the names its DID owns would be lost)`);
    }
    throw new CommandError(`cannot write ${path}: ${error instanceof Error ? error.message : error}`);
  }
}

async function signEntryCommand(args: string[], io: KeyCommandIo): Promise<number> {
  const options = parseOptions(args, { key: { type: "string" }, file: { type: "string" } });
  if (options.help) return printUsage(io);
  const file = requireOption(options.file, "--file");
  const key = await loadKey(options.key, io);
  const entry = parseEntry(await readInput(file, io), file);
  if (entry.publisherDid !== key.did) {
    throw new CommandError(
      `the key's DID ${key.did} is not the entry's publisherDid ${String(entry.publisherDid)}; ` +
        "the registry would refuse the signature",
    );
  }
  // Spread keeps every field as written (publishedAt too: the payload normalises it, not the file);
  // the body names its payload, v2 unless the file chose.
  const body = { ...entry, payloadType: entry.payloadType ?? ENTRY_PAYLOAD_TYPE_V2 };
  printJson(io, { ...body, signature: await signEntry(body, key.privateKey) });
  return EXIT_OK;
}

async function signRevokeCommand(args: string[], io: KeyCommandIo): Promise<number> {
  const options = parseOptions(args, {
    key: { type: "string" },
    did: { type: "string" },
    reason: { type: "string" },
  });
  if (options.help) return printUsage(io);
  const did = requireOption(options.did, "--did");
  const reason = requireOption(options.reason, "--reason");
  const key = await loadKey(options.key, io);
  printJson(io, { reason, signature: await signRevocation(did, reason, key.privateKey) });
  return EXIT_OK;
}

type StringOptions = Record<string, { type: "string" }>;

function parseOptions<T extends StringOptions>(args: string[], options: T): { [K in keyof T]?: string } & { help?: boolean } {
  try {
    const { values } = parseArgs({
      args: joinOptionValues(args, options),
      options: { ...options, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    });
    return values as { [K in keyof T]?: string } & { help?: boolean };
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function requireOption(value: string | undefined, name: string): string {
  if (value === undefined || value === "") throw new UsageError(`${name} is required`);
  return value;
}

/**
 * The signing key of `--key` or REGISTRY_SIGNING_KEY, for the commands that sign and send
 * (publish, revoke): the same forms as `sign`. Throws an Error whose message names the problem.
 */
export async function loadSigningKey(flag: string | undefined, env: Readonly<Record<string, string | undefined>>): Promise<KeyPair> {
  return loadKey(flag, { stdout: () => {}, stderr: () => {}, env });
}

/** The key from --key or REGISTRY_SIGNING_KEY: base64url text, or @path of a file holding it. */
async function loadKey(flag: string | undefined, io: KeyCommandIo): Promise<KeyPair> {
  const given = flag ?? (io.env ?? process.env).REGISTRY_SIGNING_KEY;
  if (given === undefined || given === "") {
    throw new UsageError("--key (or the environment variable REGISTRY_SIGNING_KEY) is required");
  }
  const source = given.startsWith("@") ? `key file ${given.slice(1)}` : "--key";
  const keyText = given.startsWith("@") ? keyTextOfFile(await readTextFile(given.slice(1), io), source) : given;
  const seed = decodePrivateKey(keyText);
  if ("error" in seed) throw new CommandError(`${source}: ${seed.error}${pathHint(given)}`);
  return keyPairFromSeed(seed);
}

/**
 * A seed is base64url, which has no "." or "/": a value with either was meant as a file, the
 * commonest slip after `key generate --out publisher.json`, so the refusal says how to name one.
 */
function pathHint(given: string): string {
  if (given.startsWith("@") || !/[./]/.test(given)) return "";
  return `; to read the key file ${given}, write --key @${given}`;
}

/** A key file holds the bare seed, or the JSON `registry key generate` printed. */
function keyTextOfFile(contents: string, source: string): string {
  const trimmed = contents.trim();
  if (!trimmed.startsWith("{")) return trimmed;
  const parsed = parseJson(trimmed, source) as { privateKey?: unknown };
  if (typeof parsed.privateKey !== "string") {
    throw new CommandError(`${source}: JSON key file has no "privateKey" string`);
  }
  return parsed.privateKey;
}

async function readInput(file: string, io: KeyCommandIo): Promise<string> {
  if (file !== "-") return readTextFile(file, io);
  return (io.readStdin ?? (() => text(process.stdin)))();
}

async function readTextFile(path: string, io: KeyCommandIo): Promise<string> {
  try {
    return await (io.readFile ?? ((p: string) => readFile(p, "utf8")))(path);
  } catch (error) {
    throw new CommandError(`cannot read ${path}: ${error instanceof Error ? error.message : error}`);
  }
}

/** Kinds a manifest writes as JSON strings. */
const STRING_KINDS: ReadonlySet<FieldKind> = new Set(["text", "semver", "time", "amount"]);
const SIGNED_FIELDS = PUBLISHER_FIELDS.filter((field) => fieldSpec(field).signed === true);
const REQUIRED_STRINGS = SIGNED_FIELDS.filter((field) => fieldSpec(field).required === true && STRING_KINDS.has(field.kind)).map(
  (field) => field.name,
);
const OPTIONAL_STRINGS = SIGNED_FIELDS.filter((field) => fieldSpec(field).required !== true && STRING_KINDS.has(field.kind)).map(
  (field) => field.name,
);

type EntryFile = EntrySigningFields & Record<string, unknown>;

/**
 * Checks only what signing needs (present fields of the right JSON type, a readable time), so a
 * mistake is named here instead of surfacing as "signature does not verify". The registry applies
 * the full field rules.
 */
function parseEntry(contents: string, file: string): EntryFile {
  const source = file === "-" ? "stdin" : file;
  const entry = parseJson(contents, source);
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    throw new CommandError(`${source}: must hold a JSON object (the entry)`);
  }
  const fields = entry as Record<string, unknown>;
  for (const name of REQUIRED_STRINGS) {
    if (typeof fields[name] !== "string" || fields[name] === "") {
      throw new CommandError(`${source}: ${name} is required (a string)`);
    }
  }
  for (const name of OPTIONAL_STRINGS) {
    if (fields[name] != null && typeof fields[name] !== "string") {
      throw new CommandError(`${source}: ${name} must be a string`);
    }
  }
  checkOptionalShapes(fields, source);
  return fields as EntryFile;
}

function checkOptionalShapes(fields: Record<string, unknown>, source: string): void {
  if (Number.isNaN(Date.parse(fields.publishedAt as string))) {
    throw new CommandError(`${source}: publishedAt must be an RFC 3339 time`);
  }
  const { tags, data } = fields;
  if (tags != null && !(Array.isArray(tags) && tags.every((tag) => typeof tag === "string"))) {
    throw new CommandError(`${source}: tags must be an array of strings`);
  }
  if (data != null && (typeof data !== "object" || Array.isArray(data))) {
    throw new CommandError(`${source}: data must be a JSON object`);
  }
}

function parseJson(contents: string, source: string): unknown {
  try {
    return JSON.parse(contents);
  } catch (error) {
    throw new CommandError(`${source}: not JSON (${error instanceof Error ? error.message : error})`);
  }
}

function printJson(io: KeyCommandIo, value: unknown): void {
  io.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

function printUsage(io: KeyCommandIo): number {
  io.stdout(KEY_COMMAND_USAGE);
  return EXIT_OK;
}

function reportFailure(error: unknown, io: KeyCommandIo): number {
  if (error instanceof UsageError) {
    io.stderr(terminal`registry: ${error.message}\n\n` + KEY_COMMAND_USAGE);
    return EXIT_USAGE;
  }
  if (error instanceof CommandError) {
    io.stderr(terminal`registry: ${error.message}\n`);
    return EXIT_FAILURE;
  }
  throw error;
}
