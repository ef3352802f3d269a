// The process entry point of the `registry` command: compiled to dist/ for `npm start`, and run
// from the sources by bin/registry.js.
import { main } from "./main.js";

process.exitCode = await main(process.argv.slice(2));
