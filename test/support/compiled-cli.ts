import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Global setup of the lanes that run `registry` as a process: they run the compiled build
 * (bin/registry.js), as an install does, so dist/ is brought up to date first. It compiles only
 * when a source is newer than the last build; a run on an unchanged tree starts at once.
 */
export default function setup(): void {
  const build = fileURLToPath(new URL("../../bin/build.js", import.meta.url));
  const result = spawnSync(process.execPath, [build, "--if-stale"], { stdio: "inherit" });
  if (result.status !== 0) throw new Error(`node bin/build.js --if-stale failed (exit ${result.status}): the tests run the compiled CLI`);
}
