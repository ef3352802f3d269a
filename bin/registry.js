#!/usr/bin/env node
// Runs the `registry` command from the TypeScript sources through tsx's loader, so the CLI and
// the tests always run the code as it is. `npm start` runs the compiled build instead (dist/).
import { register } from "tsx/esm/api";

register();
await import("../src/cli/run.ts");
