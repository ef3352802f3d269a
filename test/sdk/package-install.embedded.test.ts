import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodePrivateKey, generateKeyPair } from "../../src/sdk/node.js";
import { startRegistryOnFreshDatabase, type FreshRegistry } from "../support/registry-fixture.js";
import { consumerFiles } from "./sdk-package-consumer.js";

/**
 * The SDK as a user gets it: `npm run pack:sdk`'s tarball, installed alone into a project outside
 * the repository, type-checked by a strict consumer, run in Node and, bundled, in Chromium against
 * a running registry.
 */

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const MB = 1024 * 1024;
const KB = 1024;
/** Debian's chromium (apt-get install chromium), which .ci/run installs. */
const CHROMIUM = "/usr/bin/chromium";
const NODE_BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

let workDir: string;
let app: string;
let tarball: string;
let fresh: FreshRegistry;
let logKey: string;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), "sdk-package-"));
  app = join(workDir, "app");
  // The script npm run pack:sdk runs; its last line of stdout is the tarball.
  const packed = await run(process.execPath, [join(root, "bin/pack-sdk.js"), "--pack-destination", workDir], { cwd: root });
  tarball = packed.stdout.trimEnd().split("\n").at(-1)!;

  await mkdir(app);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "sdk-consumer", private: true, type: "module" }));
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], { cwd: app });
  for (const [path, text] of Object.entries(consumerFiles(join(root, "node_modules/@types")))) await writeFile(join(app, path), text);

  fresh = await startRegistryOnFreshDatabase();
  logKey = ((await (await fetch(`${fresh.registry.url}/v1/log/key`)).json()) as { verifierKey: string }).verifierKey;
}, 180_000);

afterAll(async () => {
  await fresh?.close();
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

/** The inputs of the consumer's walk, for a new publisher whose root token may publish skills. */
async function walkInput(name: string) {
  const key = await generateKeyPair();
  const rootToken = await fresh.registry.rootToken(key.did, ["registry.publish.skill"]);
  return { baseUrl: fresh.registry.url, seed: encodePrivateKey(key.privateKey), rootToken, logKey, name };
}

/** What the walk returns for `name`, whichever transport and runtime ran it. */
function expectedWalk(name: string) {
  return {
    stored: { entryDid: `did:reg:main:skill:${name}@1.0.0`, status: "active", sequence: expect.stringMatching(/^\d+$/) },
    resolvedVersion: "1.0.0",
    signatureValid: true,
    tamperedValid: false,
    proof: { pinned: true, kind: "entry.created", origin: logKey.split("+")[0] },
    historyKinds: ["entry.created"],
    refused: { code: "invalid_argument", fields: ["did"] },
  };
}

/** Bytes on disk under `dir`, as `du -sk` counts them. */
async function diskUsage(dir: string): Promise<number> {
  const { stdout } = await run("du", ["-sk", dir]);
  return Number(stdout.split("\t")[0]) * 1024;
}

/** Every file path in the installed package, relative to it. */
function installedFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((path) => statSync(join(dir, path)).isFile());
}

describe("the packed SDK", () => {
  it("is the SDK alone: its own dependencies, its sources' closure, the descriptors and protos", async () => {
    expect(tarball).toMatch(/open-registry-sdk-\d+\.\d+\.\d+.*\.tgz$/);
    expect(existsSync(tarball)).toBe(true);
    const installed = join(app, "node_modules/@open-registry/sdk");
    const manifest = JSON.parse(await readFile(join(installed, "package.json"), "utf8"));
    const rootManifest = JSON.parse(await readFile(join(root, "package.json"), "utf8"));
    // Each dependency at the root's range; none of the server's (database, HTTP edge, CLI, telemetry).
    const rootRanges = { ...rootManifest.devDependencies, ...rootManifest.dependencies };
    for (const [name, range] of Object.entries(manifest.dependencies)) expect(range).toBe(rootRanges[name]);
    expect(Object.keys(manifest.dependencies).sort()).toEqual([
      "@bufbuild/protobuf",
      "@connectrpc/connect",
      "@connectrpc/connect-node",
      "@connectrpc/connect-web",
      "@noble/ed25519",
      "@noble/hashes",
      "@scure/base",
      "canonicalize",
      "semver",
    ]);
    const files = installedFiles(installed);
    // The server's sources (storage, edge, cli, ...) are not in the SDK's import closure.
    const sourceDirs = new Set(files.filter((path) => path.startsWith("dist/src/")).map((path) => path.split("/")[2]));
    expect([...sourceDirs].sort()).toEqual(["domain", "errors.js", "errors.d.ts", "sdk", "transparency"].sort());
    expect(files).toContain("dist/gen/registry/v1/registry_service_pb.js");
    expect(files).toContain("dist/gen/registry/v1/registry_service_pb.d.ts");
    expect(files).toContain("proto/registry/v1/registry_service.proto");
  });

  it("installs alone in at most 15 MB", async () => {
    const bytes = await diskUsage(join(app, "node_modules"));
    expect(bytes).toBeLessThanOrEqual(15 * MB);
  });

  it("type-checks in a strict consumer, with NodeNext resolution for Node and Bundler resolution for browsers", async () => {
    const tsc = join(root, "node_modules/typescript/bin/tsc");
    const check = (config: string) =>
      run(process.execPath, [tsc, "-p", config], { cwd: app }).then(
        () => "",
        (error: { stdout?: string }) => error.stdout ?? String(error),
      );
    // The Node program is also compiled to out/, which the next test runs.
    expect(await check("tsconfig.node.json")).toBe("");
    expect(await check("tsconfig.browser.json")).toBe("");
  }, 180_000);

  it("runs in Node against a registry: Connect and gRPC through the client, and a raw generated service", async () => {
    const input = await walkInput("packed-node");
    const { stdout } = await run(process.execPath, ["out/node-main.js"], {
      cwd: app,
      env: { ...process.env, WALK_INPUT: JSON.stringify(input) },
    });
    expect(JSON.parse(stdout)).toEqual({
      connect: expectedWalk("packed-node"),
      grpcVersion: "1.0.0",
      rawVerifierKey: logKey,
      protoShipped: true,
    });
  }, 60_000);
});

describe("the packed SDK in a browser", () => {
  let browser: Browser;
  let page: Server;
  let bundle: string;

  /** Bundles `entry` of the scratch project for browsers, minified, resolving the installed package. */
  async function bundleForBrowsers(entry: string) {
    const output = await build({
      entryPoints: [join(app, entry)],
      absWorkingDir: app,
      bundle: true,
      minify: true,
      platform: "browser",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const imported = Object.values(output.metafile.inputs).flatMap((input) => input.imports.map((i) => i.path));
    return { code: output.outputFiles[0]!.contents, inputs: Object.keys(output.metafile.inputs), imported };
  }

  beforeAll(async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`).toBe(true);
    bundle = Buffer.from((await bundleForBrowsers("browser-main.ts")).code).toString("utf8");
    // The page comes from its own origin, as a web app's would; the registry answers it through CORS.
    page = createServer((request, response) => {
      if (request.url === "/app.js") {
        response.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
        return;
      }
      response
        .writeHead(200, { "content-type": "text/html" })
        .end('<!doctype html><body><script type="module" src="/app.js"></script></body>');
    });
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.close(resolve));
  });

  it("bundles createRegistryClient from the installed package in at most 80 KB gzipped, with no Node builtin", async () => {
    const { code, inputs, imported } = await bundleForBrowsers("client-only.ts");
    expect(imported.filter((path) => NODE_BUILTINS.has(path))).toEqual([]);
    // Built from the installed package's compiled files, not the repository's sources.
    expect(inputs.some((path) => path.includes("node_modules/@open-registry/sdk/dist/src/sdk/index.js"))).toBe(true);
    expect(gzipSync(code, { level: 9 }).length).toBeLessThanOrEqual(80 * KB);
  });

  it.each(["connect", "grpc-web"] as const)(
    "publishes, reads and proves an entry from Chromium over %s",
    async (transport) => {
      const name = `packed-browser-${transport}`;
      const input = { ...(await walkInput(name)), transport };
      const address = page.address() as { port: number };
      const tab = await browser.newPage();
      try {
        await tab.goto(`http://127.0.0.1:${address.port}/#${encodeURIComponent(JSON.stringify(input))}`);
        await tab.waitForSelector("body[data-result], body[data-error]", { state: "attached", timeout: 20_000 });
        expect(await tab.getAttribute("body", "data-error")).toBeNull();
        expect(JSON.parse((await tab.getAttribute("body", "data-result"))!)).toEqual(expectedWalk(name));
      } finally {
        await tab.close();
      }
    },
    60_000,
  );
});
