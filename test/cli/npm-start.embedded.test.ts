import { spawn, spawnSync } from "node:child_process";
import { statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PROJECT_ROOT, childEnv, temporaryDirectory } from "../support/child-processes.js";

/**
 * `npm start` as a user runs it: it compiles only when a source changed, and the server is npm's
 * direct child, so stopping npm stops the server (it used to run under `sh -c` and be orphaned,
 * still holding the embedded database).
 */

const BUILD = join(PROJECT_ROOT, "bin", "build.js");
const checkStale = () => spawnSync(process.execPath, [BUILD, "--check"], { cwd: PROJECT_ROOT }).status;

let dataDir: { path: string; remove(): Promise<void> };
// dist/ is current: the lane's global setup (compiled-cli.ts) built it if a source had changed.
beforeAll(async () => {
  dataDir = await temporaryDirectory("npm-start-");
});
afterAll(() => dataDir.remove());

it("builds only when a source is newer than the last build", () => {
  expect(checkStale()).toBe(0);
  const source = join(PROJECT_ROOT, "src", "cli", "run.ts");
  const { atime, mtime } = statSync(source);
  try {
    const later = new Date(Date.now() + 60_000);
    utimesSync(source, later, later);
    expect(checkStale()).toBe(1);
  } finally {
    utimesSync(source, atime, mtime);
  }
  expect(checkStale()).toBe(0);
});

it("runs the server as npm's direct child, which SIGTERM to npm stops", async () => {
  const npm = spawn("npm", ["start", "--silent"], {
    cwd: PROJECT_ROOT,
    env: childEnv({ DATABASE_URL: "", REGISTRY_DATA_DIR: join(dataDir.path, "data"), PORT: "0", HOST: "127.0.0.1" }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const listening = new Promise<{ url: string; pid: number }>((resolve, reject) => {
    npm.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      const line = output.split("\n").find((candidate) => candidate.includes('"registry listening"'));
      if (line !== undefined) resolve(JSON.parse(line) as { url: string; pid: number });
    });
    npm.once("exit", (code) => reject(new Error(`npm start exited (${code}) before listening:\n${output}`)));
  });
  const { url, pid } = await listening;
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  expect(pid).not.toBe(npm.pid);

  const exited = new Promise<void>((resolve) => npm.once("exit", () => resolve()));
  npm.kill("SIGTERM");
  await exited;
  // The server got the signal too, and ended: no orphan keeps the port or the data directory.
  const deadline = Date.now() + 10_000;
  while (isRunning(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(isRunning(pid)).toBe(false);
  expect(output).toContain('"signal":"SIGTERM"');
}, 60_000);

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
