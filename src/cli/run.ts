// The process entry point of the `registry` command: compiled to dist/ for bin/registry.js and
// `npm start`, and run from the sources by bin/registry-dev.js.
import { inspect } from "node:util";
import { main } from "./main.js";
import { terminalLines } from "./terminal-text.js";

// `registry --help | head` closes the pipe early: the reader's choice, not a failure to report.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
});

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  // A failure no command expected, shown and ended as node would, but escaped: its message may quote a server.
  process.stderr.write(terminalLines(`${inspect(error)}\n`));
  process.exit(1);
}
