import { readdir, readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Encoding } from "../../transport/compression.js";

/**
 * Where the built explorer is: dist/explorer/, beside the compiled service in an install, or under
 * the repository's dist/ when the service runs from its sources. bin/build.js writes it.
 */
export function explorerDirectory(): string {
  const up = fileURLToPath(new URL("../../../", import.meta.url));
  return basename(up) === "dist" ? join(up, "explorer") : join(up, "dist", "explorer");
}

/** The built files the server reads: the page template, and the hashed assets by name. */
export interface ExplorerFiles {
  /** index.html as built, or undefined when there is no build. */
  readonly template: string | undefined;
  /** The build's asset names (compressed forms aside), as listed at start. */
  readonly assetNames: ReadonlySet<string>;
  readAsset(file: string): Promise<Buffer | undefined>;
  /** The build's compressed form of an asset (`.br`, `.gz` beside it), or undefined. */
  readCompressedAsset(file: string, encoding: Encoding): Promise<Buffer | undefined>;
}

export async function loadExplorerFiles(directory: string): Promise<ExplorerFiles> {
  // No build, or one being rewritten this moment: the pages say how to build rather than the start failing.
  const template = await readFile(join(directory, "index.html"), "utf8").catch(() => undefined);
  const listed = await readdir(join(directory, "assets")).catch(() => [] as string[]);
  const assetNames = new Set(listed.filter((name) => !name.endsWith(".br") && !name.endsWith(".gz")));
  return {
    template,
    assetNames,
    async readAsset(file) {
      if (!assetNames.has(file)) return undefined;
      return readFile(join(directory, "assets", file)).catch(() => undefined);
    },
    async readCompressedAsset(file, encoding) {
      return readFile(join(directory, "assets", `${file}.${encoding === "br" ? "br" : "gz"}`)).catch(() => undefined);
    },
  };
}

/** The page every address answers: the template with the log's verifier key filled in for the page to pin. */
export function pageHtml(template: string, logKey: string): string {
  // A function, so that "$&" and the like in the key are text, not replacement patterns.
  return template.replace("%REGISTRY_LOG_KEY%", () => escapeAttribute(logKey));
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** What `/` says when the service runs without a built explorer (a development run). */
export const NOT_BUILT_TEXT =
  "The explorer is not built. Run `npm run build` (or `node bin/build-explorer.js`) and restart the registry.\n" +
  "The API is served as usual: see /docs.\n";
