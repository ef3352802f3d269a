#!/usr/bin/env node
// Builds the SDK package (@open-registry/sdk) from src/sdk, what it imports, gen/ and proto/, and
// packs it with npm. Its package.json is packages/sdk/package.json plus what is derived here: the
// version and engines of the root package, and as dependencies exactly the packages the compiled
// files import, at the root package.json's ranges (dependencies, else devDependencies), so the SDK
// never declares a server dependency.
//
//   node bin/pack-sdk.js [--pack-destination DIR]   (npm run pack:sdk; DIR defaults to packages/sdk/build)
//
// The tarball's absolute path is the last line of stdout.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const template = join(root, "packages", "sdk");
const BUILTINS = new Set(builtinModules);

/** The value after `flag`, or `fallback` when the flag is absent. */
function option(args, flag, fallback) {
  const at = args.indexOf(flag);
  if (at === -1) return fallback;
  const value = args[at + 1];
  if (value === undefined || value.startsWith("--")) throw new Error(`${flag} needs a directory`);
  return value;
}

function readJson(path) {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** Runs a command; its output goes to stderr so that stdout stays the script's own. */
function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" });
  if (result.status !== 0) {
    process.stderr.write(result.stdout ?? "");
    throw new Error(`${command} ${args.join(" ")} exited with ${result.status ?? result.signal}`);
  }
  return result.stdout;
}

/** Every file under `dir` whose name ends with one of `suffixes`. */
function filesUnder(dir, suffixes) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && suffixes.some((suffix) => entry.name.endsWith(suffix)))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The package a bare specifier names ("@scope/name/sub" -> "@scope/name"), or undefined for a relative or builtin one. */
function packageOf(specifier) {
  if (specifier.startsWith(".") || specifier.startsWith("node:") || BUILTINS.has(specifier)) return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** The packages the emitted JavaScript and declarations import, sorted. */
function importedPackages(dist) {
  const statement = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"|(?:^|\n)\s*import\s*"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/g;
  const packages = new Set();
  for (const file of filesUnder(dist, [".js", ".d.ts"])) {
    for (const match of readFileSync(file, "utf8").matchAll(statement)) {
      const name = packageOf(match[1] ?? match[2] ?? match[3]);
      if (name !== undefined) packages.add(name);
    }
  }
  return [...packages].sort();
}

/**
 * The SDK's dependencies: each imported package at the root package.json's range. A package only
 * the SDK uses may sit in the root's devDependencies, where the server's install leaves it out.
 */
function dependenciesOf(dist, rootPackage) {
  const dependencies = {};
  for (const name of importedPackages(dist)) {
    const range = rootPackage.dependencies?.[name] ?? rootPackage.devDependencies?.[name];
    if (range === undefined) throw new Error(`the SDK imports ${name}, which the root package.json does not list`);
    dependencies[name] = range;
  }
  return dependencies;
}

function main() {
  const args = process.argv.slice(2);
  const destination = resolve(option(args, "--pack-destination", join(template, "build")));
  const rootPackage = readJson(join(root, "package.json"));
  const stage = mkdtempSync(join(tmpdir(), "open-registry-sdk-"));
  try {
    const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
    run(process.execPath, [tsc, "-p", join(template, "tsconfig.json"), "--outDir", join(stage, "dist")], root);
    cpSync(join(root, "proto"), join(stage, "proto"), { recursive: true });
    cpSync(join(template, "README.md"), join(stage, "README.md"));

    const { "//": _comment, ...fields } = readJson(join(template, "package.json"));
    const manifest = {
      name: fields.name,
      version: rootPackage.version,
      ...fields,
      engines: rootPackage.engines,
      dependencies: dependenciesOf(join(stage, "dist"), rootPackage),
    };
    writeFileSync(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);

    mkdirSync(destination, { recursive: true });
    const [packed] = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", destination], stage));
    const kB = (bytes) => `${(bytes / 1000).toFixed(1)} kB`;
    process.stdout.write(
      `packed ${packed.id}: ${packed.entryCount} files, ${kB(packed.size)} (unpacked ${kB(packed.unpackedSize)}); ` +
        `dependencies ${Object.keys(manifest.dependencies).join(", ")}\n`,
    );
    process.stdout.write(`${join(destination, packed.filename)}\n`);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

try {
  main();
} catch (error) {
  process.stderr.write(`pack-sdk: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
