import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const packageJson = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { exports: Record<string, unknown> };
const sdkTsconfig = JSON.parse(readFileSync(new URL("tsconfig.sdk.json", root), "utf8")) as { files: string[] };

interface Target {
  readonly types: string;
  readonly default: string;
}

/** Every { types, default } pair an export (or one of its conditions) names. */
function targets(entry: unknown): Target[] {
  const value = entry as Record<string, unknown>;
  if (typeof value.default === "string") return [value as unknown as Target];
  return Object.values(value).flatMap(targets);
}

const sdkTargets = Object.entries(packageJson.exports)
  .filter(([subpath]) => subpath.startsWith("./sdk"))
  .flatMap(([subpath, entry]) => targets(entry).map((target) => [subpath, target] as const));

describe("the SDK's package exports", () => {
  it("names the browser entry by default and the Node entry under the node condition", () => {
    const sdk = packageJson.exports["./sdk"] as { node: Target; default: Target };
    expect(sdk.default.default).toBe("./dist/src/sdk/index.js");
    expect(sdk.node.default).toBe("./dist/src/sdk/node.js");
  });

  it.each(sdkTargets)("%s points at the build of a source entry, with its declarations beside it", (_subpath, target) => {
    const source = target.default.replace(/^\.\/dist\//, "").replace(/\.js$/, ".ts");
    expect(existsSync(new URL(source, root))).toBe(true);
    expect(target.types).toBe(target.default.replace(/\.js$/, ".d.ts"));
    // tsconfig.sdk.json emits the declarations the types condition names.
    expect(sdkTsconfig.files).toContain(source);
  });
});
