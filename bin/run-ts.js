#!/usr/bin/env node
// Runs a TypeScript file (e.g. the benchmark) through tsx's loader.
import { register } from "tsx/esm/api";
import { pathToFileURL } from "node:url";

register();
const [file, ...args] = process.argv.slice(2);
process.argv = [process.argv[0], file, ...args];
await import(pathToFileURL(file).href);
