import { readFileSync } from "node:fs";
import { ConfigError } from "./config.js";

/**
 * The optional integrations' packages (the Redis client, the OTLP trace exporter) are optional
 * peer dependencies: a production install leaves them out, so the server stays small for those
 * who do not use them. A setting that needs one that is absent says which package to add, at the
 * version package.json names, rather than failing on a bare import.
 */
export async function importOptionalPackage<T>(name: string, setting: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND" && String(error).includes(`'${name}'`);
    if (!missing) throw error;
    throw new ConfigError(
      `${setting} needs the ${name} package, which the registry's install leaves out: install ${name}@${peerRange(name)} beside it (npm install -g for a global install of the registry)`,
    );
  }
}

/** The version range package.json's peerDependencies give `name` (one level up from src/, two from dist/src/). */
function peerRange(name: string): string {
  for (const relative of ["../package.json", "../../package.json"]) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8")) as {
        name?: string;
        peerDependencies?: Record<string, string>;
      };
      const range = manifest.name === "open-registry" ? manifest.peerDependencies?.[name] : undefined;
      if (range !== undefined) return range;
    } catch {
      // Not this one: the sources and the build sit at different depths.
    }
  }
  return "latest";
}
