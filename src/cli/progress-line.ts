import type { CliContext } from "./cli-context.js";

/** A progress line on stderr: what a long command has done so far. */
export interface ProgressLine {
  /** Shows `line` (the CLI's own words and numbers, never a server's text unescaped). */
  update(line: string): void;
  /** Ends the line on a terminal, so what follows starts on its own. */
  end(): void;
}

/**
 * A progress line on stderr when stderr is a terminal, rewritten in place there; with `always`
 * (a command's --progress), also when it is not, one line per update, so a log file can keep it.
 * Nothing otherwise: a script reading stderr sees only messages.
 */
export function createProgressLine(context: CliContext, options: { readonly always?: boolean } = {}): ProgressLine {
  const shown = context.stderrIsTty || options.always === true;
  let written = false;
  return {
    update(line) {
      if (!shown) return;
      // The CR and the erase-line are the template's own, never a value's: the line is rewritten in place.
      if (context.stderrIsTty) context.stderr`\r\u001b[K${line}`;
      else context.stderr`${line}\n`;
      written = true;
    },
    end() {
      if (written && context.stderrIsTty) context.stderr("\n");
      written = false;
    },
  };
}
