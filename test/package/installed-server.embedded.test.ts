import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { lstat, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { childEnv, freePort, PROJECT_ROOT, temporaryDirectory } from "../support/child-processes.js";
import { copyWorkingTree } from "../readme/walkthrough-script.js";

/**
 * The server as a self-hoster installs it: `npm pack` on a fresh copy of the working tree (its
 * prepack compiles dist/), `npm install -g` of that tarball into a prefix of its own, and the
 * `registry` the install puts on the PATH serving on the embedded database, over plain HTTP.
 */

/** The production install's bound (issue 24), in MiB on disk as `du` counts them. */
const INSTALL_LIMIT_MIB = 80;
const run = promisify(execFile);

let workspace: { path: string; remove(): Promise<void> };
let prefix: string;
let installed: string;
let server: ChildProcess | undefined;

beforeAll(async () => {
  workspace = await temporaryDirectory("installed-server-");
  const clone = join(workspace.path, "open-registry");
  await copyWorkingTree(PROJECT_ROOT, clone);
  const env = npmEnv();
  // npm prints the tarball's name as its last line; the prepack build's output goes to stderr.
  const packed = await run("npm", ["pack", "--pack-destination", workspace.path], { cwd: clone, env });
  const tarball = join(workspace.path, packed.stdout.trim().split("\n").at(-1) ?? "");
  prefix = join(workspace.path, "prefix");
  await run("npm", ["install", "--global", "--prefix", prefix, "--no-audit", "--no-fund", tarball], { cwd: workspace.path, env });
  installed = join(prefix, "lib", "node_modules", "open-registry");
}, 300_000);

afterAll(async () => {
  server?.kill("SIGKILL");
  await workspace?.remove();
});

it("ships compiled JavaScript only: no sources, no TypeScript runtime, no install-time telemetry", async () => {
  const shipped = await filesUnder(installed, (path) => !path.startsWith("node_modules/"));
  expect(shipped).toContain("bin/registry.js");
  expect(shipped).toContain("dist/src/cli/run.js");
  expect(shipped).toContain("dist/src/edge/openapi/swagger-ui/swagger-ui-bundle.js");
  expect(shipped).toContain("dist/explorer/index.html");
  expect(shipped.filter((path) => path.endsWith(".ts") && !path.endsWith(".d.ts"))).toEqual([]);
  expect(shipped.filter((path) => path.startsWith("src/") || path.startsWith("test/"))).toEqual([]);

  const packages = await packagesUnder(join(installed, "node_modules"));
  expect(packages.size).toBeGreaterThan(50);
  for (const name of ["tsx", "esbuild", "typescript", "swagger-ui-dist", "@scarf/scarf"]) expect(packages).not.toContain(name);
  expect([...packages].filter((name) => name.startsWith("@esbuild/"))).toEqual([]);
  // The optional integrations' packages are left out (the last test shows what asks for them).
  for (const name of ["redis", "@opentelemetry/exporter-trace-otlp-http"]) expect(packages).not.toContain(name);
});

it(`installs in at most ${INSTALL_LIMIT_MIB} MiB`, async () => {
  // The whole install: the package and its node_modules, as `du -s` counts them (allocated blocks).
  const mib = (await diskUsage(join(prefix, "lib", "node_modules"))) / 2 ** 20;
  expect(mib).toBeLessThanOrEqual(INSTALL_LIMIT_MIB);
});

it("puts `registry` on the PATH, which serves on the embedded database", async () => {
  const registry = join(prefix, "bin", "registry");
  expect(existsSync(registry)).toBe(true);
  const { version } = JSON.parse(await readFile(join(installed, "package.json"), "utf8")) as { version: string };
  const env = childEnv({ PATH: `${join(prefix, "bin")}:${process.env.PATH}`, DATABASE_URL: undefined });
  expect((await run("registry", ["--version"], { env, cwd: workspace.path })).stdout.trim()).toBe(version);

  const port = await freePort();
  server = spawn("registry", ["serve"], {
    cwd: workspace.path,
    env: { ...env, PORT: String(port), HOST: "127.0.0.1", REGISTRY_DATA_DIR: join(workspace.path, "data") },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  server.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  server.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  await untilReady(`${url}/readyz`, server, () => output);

  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  const missing = await fetch(`${url}/v1/entries/did:reg:main:skill:not-published`);
  expect(missing.status).toBe(404);
  expect(await missing.json()).toMatchObject({ code: "not_found" });
  // The API reference page's renderer, served from the copy the package carries.
  const renderer = await fetch(`${url}/docs/swagger-ui-bundle.js`);
  expect(renderer.status).toBe(200);
  expect((await renderer.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  // The explorer, from the build the package carries: the page and the script it names.
  const home = await fetch(url);
  expect(home.status).toBe(200);
  const script = /src="(\/assets\/[^"]+\.js)"/.exec(await home.text())?.[1];
  expect((await fetch(`${url}${script}`)).status).toBe(200);

  const exited = new Promise<number | null>((resolve) => server?.once("exit", (code) => resolve(code)));
  server.kill("SIGTERM");
  expect(await exited, output).toBe(0);
  server = undefined;
}, 180_000);

it("names the package to add when a setting needs an optional integration the install left out", async () => {
  const env = childEnv({ PATH: `${join(prefix, "bin")}:${process.env.PATH}`, DATABASE_URL: undefined });
  const serve = (settings: Record<string, string>) =>
    run("registry", ["serve"], {
      cwd: workspace.path,
      env: { ...env, PORT: "0", HOST: "127.0.0.1", REGISTRY_DATA_DIR: join(workspace.path, "data"), ...settings },
      // A refused setting closes whatever it opened: a pool left open would keep the process
      // alive until its idle timeout (30 s), and this kill would fail the run.
      timeout: 20_000,
    }).then(
      () => ({ code: 0 as number | null, stderr: "" }),
      // Killed at the timeout, code is null: the signal goes into the message instead.
      (error: { code: number | null; signal: string | null; stderr: string }) => ({
        code: error.code,
        stderr: error.code === null ? `killed by ${error.signal}\n${error.stderr}` : error.stderr,
      }),
    );
  const versions = JSON.parse(await readFile(join(installed, "package.json"), "utf8")).peerDependencies as Record<string, string>;

  const traced = await serve({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" });
  expect(traced.code, traced.stderr).toBe(2);
  const exporter = "@opentelemetry/exporter-trace-otlp-http";
  expect(traced.stderr).toContain(`tracing (an OTLP endpoint) needs the ${exporter} package`);
  expect(traced.stderr).toContain(`install ${exporter}@${versions[exporter]} beside it`);

  // On the data directory the test above made, whose database is not opened for a refused setting.
  const shared = await serve({ REDIS_URL: "redis://127.0.0.1:6379" });
  expect(shared.code, shared.stderr).toBe(2);
  expect(shared.stderr).toContain(
    `REDIS_URL needs the redis package, which the registry's install leaves out: install redis@${versions.redis} beside it`,
  );
}, 180_000);

/** npm as a user's shell runs it: without the npm_* settings of an `npm test` that started this test. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith("npm_")));
}

/** Paths of the files under `root`, relative to it, that `keep` keeps (it sees directories' paths with a final slash). */
async function filesUnder(root: string, keep: (path: string) => boolean, relative = ""): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(join(root, relative), { withFileTypes: true })) {
    const path = `${relative}${entry.name}`;
    if (entry.isDirectory()) {
      if (keep(`${path}/`)) files.push(...(await filesUnder(root, keep, `${path}/`)));
    } else if (keep(path)) files.push(path);
  }
  return files;
}

/** The names of every package installed under `nodeModules`, at any depth. */
async function packagesUnder(nodeModules: string): Promise<Set<string>> {
  const names = new Set<string>();
  const visit = async (directory: string): Promise<void> => {
    if (!existsSync(directory)) return;
    for (const entry of await readdir(directory)) {
      if (entry.startsWith(".")) continue;
      const scoped = entry.startsWith("@") ? (await readdir(join(directory, entry))).map((name) => `${entry}/${name}`) : [entry];
      for (const name of scoped) {
        names.add(name);
        await visit(join(directory, name, "node_modules"));
      }
    }
  };
  await visit(nodeModules);
  return names;
}

/** Bytes allocated on disk under `path`, as `du -s` counts them (links not followed). */
async function diskUsage(path: string): Promise<number> {
  const stat = await lstat(path);
  let bytes = stat.blocks * 512;
  if (stat.isDirectory()) for (const name of await readdir(path)) bytes += await diskUsage(join(path, name));
  return bytes;
}

async function untilReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`registry serve exited (${child.exitCode}) before it was ready:\n${output()}`);
    const ready = await fetch(url, { signal: AbortSignal.timeout(1_000) })
      .then((response) => response.status === 200)
      .catch(() => false);
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`registry serve was not ready within 120 s:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
