#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so `npm install && npm start` needs no build.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
