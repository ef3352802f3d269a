import { execFile } from "node:child_process";
import { expect } from "vitest";
import { PROJECT_ROOT, REGISTRY_BIN } from "../support/child-processes.js";

/**
 * What a hostile value carries to a terminal, one of each: screen and colour sequences, an OSC 52
 * clipboard write (BEL- and ST-terminated), a CR and an LF that would draw a forged "publisher"
 * line, a tab that would add a column, bidi overrides and isolates, C1 controls (CSI, OSC, ST, NEL)
 * and DEL.
 */
export const HOSTILE = Object.freeze({
  screen: "\u001b[2J\u001b[H\u001b[31m",
  clipboard: "\u001b]52;c;cm0gLXJmIH4K\u0007\u001b]52;c;eA==\u001b\\",
  carriageReturn: "\r  publisher   did:key:forged",
  lineFeed: "\n  publisher   did:key:forged",
  tab: "column\tforged",
  bidi: "\u202etxt.exe\u202c \u2066isolated\u2069 \u202a\u202b\u202d",
  c1: "\u009b31m \u009d52;c;eA==\u009c \u0085",
  del: "\u007f",
});

/** Every hostile piece in one text, as a description, a reason or a server's message carries it. */
export const HOSTILE_TEXT = Object.values(HOSTILE).join(" | ");

/**
 * Each hostile piece as the CLI must show it: visibly, in JSON's escapes. Written out here rather
 * than computed, so the test holds the CLI to what people read.
 */
export const VISIBLE = Object.freeze([
  "\\u001b[2J\\u001b[H\\u001b[31m",
  "\\u001b]52;c;cm0gLXJmIH4K\\u0007\\u001b]52;c;eA==\\u001b\\",
  "\\r  publisher   did:key:forged",
  "\\n  publisher   did:key:forged",
  "column\\tforged",
  "\\u202etxt.exe\\u202c \\u2066isolated\\u2069 \\u202a\\u202b\\u202d",
  "\\u009b31m \\u009d52;c;eA==\\u009c \\u0085",
  "\\u007f",
]);

/** HOSTILE_TEXT as a line of the CLI's human output shows it. */
export const VISIBLE_TEXT = VISIBLE.join(" | ");

export interface CliOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `node bin/registry.js ...args` and checks the bytes it wrote on stdout and stderr before
 * decoding them: no byte of a C0 control other than LF and TAB (the CLI's own line and column
 * breaks) nor DEL, valid UTF-8, and no C1 control, line or paragraph separator or bidi control.
 */
export function runCliChecked(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliOutput> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [REGISTRY_BIN, ...args],
      { env, cwd: PROJECT_ROOT, timeout: 60_000, killSignal: "SIGKILL", encoding: "buffer" },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") {
          reject(new Error(`registry ${args.join(" ")} did not finish: ${error.message}`));
          return;
        }
        const code = error === null ? 0 : (error.code as number);
        try {
          resolve({
            code,
            stdout: terminalSafeText(stdout, `stdout of registry ${args[0]}`),
            stderr: terminalSafeText(stderr, `stderr of registry ${args[0]}`),
          });
        } catch (failure) {
          reject(failure);
        }
      },
    );
  });
}

/** C0 controls but TAB (0x09) and LF (0x0a), and DEL: in UTF-8 these bytes are never part of another character. */
const RAW_CONTROL_BYTE = (byte: number) => (byte < 0x20 && byte !== 0x09 && byte !== 0x0a) || byte === 0x7f;
/** C1 controls, U+2028 and U+2029, and the bidi embeddings, overrides and isolates. */
const UNSAFE_CODE_POINT = /[\u0080-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

function terminalSafeText(bytes: Buffer, label: string): string {
  const offset = bytes.findIndex(RAW_CONTROL_BYTE);
  expect(
    offset,
    `${label} wrote the raw byte 0x${bytes[offset]?.toString(16)} at ${offset}: ${JSON.stringify(bytes.subarray(Math.max(0, offset - 20), offset + 20).toString())}`,
  ).toBe(-1);
  const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  const unsafe = UNSAFE_CODE_POINT.exec(text);
  expect(
    unsafe,
    `${label} wrote U+${unsafe?.[0].codePointAt(0)?.toString(16).padStart(4, "0")} raw: ${JSON.stringify(text.slice(Math.max(0, (unsafe?.index ?? 0) - 20), (unsafe?.index ?? 0) + 20))}`,
  ).toBeNull();
  return text;
}

/** The lines of an output that ends with a line break, without the empty string after the last one. */
export function linesOf(output: string): string[] {
  expect(output.endsWith("\n"), `output ends with a line break: ${JSON.stringify(output)}`).toBe(true);
  return output.slice(0, -1).split("\n");
}
