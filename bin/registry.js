#!/usr/bin/env node
// The `registry` command as the package installs it: the compiled build in dist/, so it needs no
// TypeScript at run time. In a working copy, `npm run build` (or `npm start`) makes dist/, and
// bin/registry-dev.js runs the sources instead.
import { existsSync } from "node:fs";

const entry = new URL("../dist/src/cli/run.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write("registry: dist/ is not built: run `npm run build` first, or bin/registry-dev.js to run the sources\n");
  process.exit(1);
}
await import(entry.href);
