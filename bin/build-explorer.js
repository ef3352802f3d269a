#!/usr/bin/env node
// Builds the web explorer (explorer/, a Vite project) into dist/explorer/: index.html and its hashed
// assets, which the registry serves on its own port (docs/explorer.md). bin/build.js runs it.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Vite's build of explorer/vite.config.ts; throws when the build fails. */
export async function buildExplorer() {
  // Always the production build: a NODE_ENV inherited from a test runner would bundle React's development build.
  process.env.NODE_ENV = "production";
  const { build } = await import("vite");
  await build({ configFile: `${root}explorer/vite.config.ts`, logLevel: "warn" });
  precompressAssets(join(root, "dist", "explorer", "assets"));
}

/**
 * Each asset's brotli (best quality) and gzip forms beside it, made once here: the server sends
 * them as they are, where compressing on demand would spend a request's time for a smaller gain.
 */
function precompressAssets(directory) {
  for (const file of readdirSync(directory)) {
    if (!/\.(js|css|svg)$/.test(file)) continue;
    const bytes = readFileSync(join(directory, file));
    writeFileSync(join(directory, `${file}.br`), brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
    writeFileSync(join(directory, `${file}.gz`), gzipSync(bytes, { level: 9 }));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildExplorer();
