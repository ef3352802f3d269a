import { terminal, terminalLines } from "./terminal-text.js";

/**
 * Where a command writes for people, and the only way out to the process's stdout and stderr, so
 * no command can print a server's, a file's or an argument's text raw:
 *
 * - as a tag, ``write`published ${did}\n` ``: the template's own text as written, each value
 *   escaped whole (terminalText), line breaks and tabs included, so a value stays on its line;
 * - with a string (usage, help, JSON, a line built with the `terminal` tag): every control
 *   character but line breaks and tabs escaped (terminalLines), which leaves JSON valid and exact.
 */
export interface TerminalWriter {
  (strings: TemplateStringsArray, ...values: readonly unknown[]): void;
  (text: string): void;
}

/** A writer onto `sink`, which gets only text safe for a terminal. */
export function createTerminalWriter(sink: (text: string) => void): TerminalWriter {
  return (textOrStrings: string | TemplateStringsArray, ...values: readonly unknown[]) => {
    sink(typeof textOrStrings === "string" ? terminalLines(textOrStrings) : terminal(textOrStrings, ...values));
  };
}
