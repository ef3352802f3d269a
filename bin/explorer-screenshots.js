#!/usr/bin/env node
// Rewrites docs/explorer-*.png: the explorer's pages over sample entries, photographed in Debian's
// Chromium (/usr/bin/chromium). Run after changing how a page looks.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const result = spawnSync(process.execPath, ["bin/run-ts.js", "test/explorer/take-screenshots.ts"], { cwd: root, stdio: "inherit" });
process.exit(result.status ?? 1);
