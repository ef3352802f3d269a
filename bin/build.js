#!/usr/bin/env node
// The build: compiles the service to dist/ (tsconfig.build.json), then the SDK's declarations
// (tsconfig.sdk.json), copies the files of Swagger UI that /docs serves beside the compiled
// module that serves them (a development dependency, so the build carries them to an install),
// builds the web explorer into dist/explorer/ (bin/build-explorer.js), and stamps dist/ when all
// succeed.
//
//   node bin/build.js              build (npm run build)
//   node bin/build.js --if-stale   build only if a source is newer than the stamp (npm start's
//                                  prestart: a start with nothing changed does not wait ~5 s for tsc)
//   node bin/build.js --check      exit 1 if stale, 0 if not; builds nothing
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildExplorer } from "./build-explorer.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const STAMP = join(root, "dist", ".build-stamp");
const CONFIGS = ["tsconfig.build.json", "tsconfig.sdk.json"];
const INPUTS = ["src", "gen", "explorer", "tsconfig.json", ...CONFIGS, "package.json"];

/** The newest modification time under `path`, a file or a directory. */
function newestMtime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

function isStale() {
  const built = statSync(STAMP, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  return INPUTS.some((input) => newestMtime(join(root, input)) > built);
}

/** The renderer's files, named by the compiled module that serves them, into its copy's folder. */
async function copyRenderer() {
  const module = join(root, "dist", "src", "edge", "openapi", "renderer-files.js");
  const { RENDERER_FILES, RENDERER_LICENSE_FILES, RENDERER_COPY } = await import(pathToFileURL(module).href);
  const from = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  const to = join(dirname(module), RENDERER_COPY);
  mkdirSync(to, { recursive: true });
  for (const file of [...Object.keys(RENDERER_FILES), ...RENDERER_LICENSE_FILES]) copyFileSync(join(from, file), join(to, file));
}

async function build() {
  const startedAt = new Date();
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  for (const config of CONFIGS) {
    const result = spawnSync(process.execPath, [tsc, "-p", join(root, config)], { stdio: "inherit" });
    if (result.status !== 0) return result.status ?? 1;
  }
  await copyRenderer();
  await buildExplorer();
  // The time the build started: a source saved while it ran is newer, so the next start rebuilds.
  mkdirSync(join(root, "dist"), { recursive: true });
  writeFileSync(STAMP, `${startedAt.toISOString()}\n`);
  utimesSync(STAMP, startedAt, startedAt);
  return 0;
}

const args = process.argv.slice(2);
if (args.includes("--check")) process.exit(isStale() ? 1 : 0);
if (args.includes("--if-stale") && !isStale()) process.exit(0);
if (args.includes("--if-stale")) process.stderr.write("sources changed since the last build: compiling to dist/\n");
process.exit(await build());
