// The process entry point of the `registry` command: compiled to dist/ for `npm start`, and run
// from the sources by bin/registry.js.
import { main } from "./main.js";

// `registry --help | head` closes the pipe early: the reader's choice, not a failure to report.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
});

process.exitCode = await main(process.argv.slice(2));
