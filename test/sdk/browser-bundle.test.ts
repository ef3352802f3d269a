import { builtinModules } from "node:module";
import { fileURLToPath } from "node:url";
import { build, type Metafile } from "esbuild";
import { describe, expect, it } from "vitest";

const NODE_BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** Bundles `entry` for browsers; the outcome, with every import esbuild met, resolved or not. */
async function bundleForBrowsers(entry: string) {
  const imported: string[] = [];
  const result = await build({
    entryPoints: [fileURLToPath(new URL(`../../src/sdk/${entry}`, import.meta.url))],
    bundle: true,
    platform: "browser",
    format: "esm",
    write: false,
    metafile: true,
    logLevel: "silent",
    plugins: [
      {
        // Records every import path before resolution, so a builtin is seen even where esbuild's
        // browser resolution would have replaced or refused it.
        name: "record-imports",
        setup(builder) {
          builder.onResolve({ filter: /.*/ }, (args) => {
            imported.push(args.path);
            return undefined;
          });
        },
      },
    ],
  }).then(
    (output) => ({ ok: true as const, metafile: output.metafile as Metafile, errors: [] as string[] }),
    (error: { errors?: { text: string }[] }) => ({
      ok: false as const,
      metafile: undefined,
      errors: (error.errors ?? []).map((e) => e.text),
    }),
  );
  return { ...result, nodeImports: [...new Set(imported.filter((path) => NODE_BUILTINS.has(path)))] };
}

describe("the SDK's browser entry", () => {
  it("bundles for browsers with no Node builtin anywhere in its imports", async () => {
    const bundle = await bundleForBrowsers("index.ts");
    expect(bundle.errors).toEqual([]);
    expect(bundle.nodeImports).toEqual([]);
    const inputs = Object.keys(bundle.metafile!.inputs);
    // The bundle is the client, not just the signing code: the transports and the generated services are in it.
    expect(inputs.some((path) => path.includes("@connectrpc/connect-web"))).toBe(true);
    expect(inputs.some((path) => path.endsWith("gen/registry/v1/registry_service_pb.ts"))).toBe(true);
  });

  it("is told apart from the Node entry, which imports node:http2 for gRPC", async () => {
    const bundle = await bundleForBrowsers("node.ts");
    expect(bundle.ok).toBe(false);
    expect(bundle.nodeImports).toEqual(expect.arrayContaining(["node:http2"]));
  });
});
