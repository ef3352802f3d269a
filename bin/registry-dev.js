#!/usr/bin/env node
// Runs the `registry` command from the TypeScript sources through tsx's loader, so the tests and a
// working copy run the code as it is, unbuilt. Not shipped: the package's `registry` is
// bin/registry.js, which runs the compiled build.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/run.ts");
