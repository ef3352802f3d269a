import { execFile, execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkpointReaches,
  logKeyOf,
  mirrorDatabase,
  publishVersion,
  runMirrorCli,
  type MirrorDatabase,
} from "../mirror/mirror-fixture.js";
import { childEnv, PROJECT_ROOT, REGISTRY_BIN, runCli, type CliResult } from "../support/child-processes.js";
import { startPublishingRegistry, type PublishingSetup } from "../support/registry-fixture.js";

/**
 * The progress line of `registry verify` and `registry mirror`: on stderr when stderr is a
 * terminal (the CLI runs in a pseudo-terminal, made by util-linux's `script`), and nothing of it
 * when stderr is a pipe.
 */

const CLI_MS = 120_000;
const RECORDS = 5;

const hasScript = (() => {
  try {
    execFileSync("script", ["--version"]);
    return true;
  } catch {
    return false;
  }
})();

let source: PublishingSetup;
let logKey: string;
const did = "did:reg:main:skill:progress-0@1.0.0";

beforeAll(async () => {
  source = await startPublishingRegistry(["registry.publish.skill"], { logIntegrateMs: 50, logOrigin: "progress.test/log" });
  for (let i = 0; i < RECORDS; i++) await publishVersion(source, `progress-${i}`, "1.0.0");
  logKey = await logKeyOf(source.registry.url);
  await checkpointReaches(source.registry.url, RECORDS);
}, CLI_MS);

afterAll(async () => {
  await source?.close();
});

/** A shell word of `text`, for script's command line. */
function shellWord(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** `registry ...args` with stdout and stderr on a pseudo-terminal; what the terminal showed, both streams merged. */
function cliOnTerminal(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const command = [process.execPath, REGISTRY_BIN, ...args].map(shellWord).join(" ");
  return new Promise((resolve, reject) => {
    execFile(
      "script",
      ["--quiet", "--return", "--command", command, "/dev/null"],
      { env, cwd: PROJECT_ROOT, timeout: CLI_MS, killSignal: "SIGKILL" },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") reject(error);
        else resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
  });
}

/** What the progress line starts each step with: back to the line's start, and clear it. */
const ERASE_LINE = "\r\u001b[K";

/** The terminal's text as lines, each as last drawn: a CR returns to the line's start, ESC[K clears what follows. */
function drawnSteps(output: string): string[] {
  return output
    .replaceAll("\r\n", "\n")
    .replaceAll(ERASE_LINE, "\n")
    .split("\n")
    .filter((line) => line !== "");
}

describe.skipIf(!hasScript)("on a terminal", () => {
  it(
    "verify rewrites one progress line on stderr through its steps, then prints its answer",
    async () => {
      const result = await cliOnTerminal(["verify", did, "--log-key", logKey], childEnv({ REGISTRY_URL: source.registry.url }));
      expect(result.code, result.stdout).toBe(0);
      const steps = drawnSteps(result.stdout);
      expect(steps.slice(0, 3)).toEqual([
        `resolving ${did}`,
        "fetching and verifying the log's records about did:reg:main:skill:progress-0",
        `checking ${did} against 1 verified records`,
      ]);
      expect(steps[3]).toBe(`verified ${did}`);
      // Rewritten in place: each step starts with CR and erase-line, and the last ends before the answer.
      expect(result.stdout).toContain(`\r\u001b[Kchecking ${did} against 1 verified records\r\nverified ${did}`);
    },
    CLI_MS,
  );

  it(
    "mirror shows how many of the source's records it holds after each batch",
    async () => {
      const mirror = await mirrorDatabase();
      try {
        const env = childEnv({ REGISTRY_LOG_KEY: undefined, ...mirror.env });
        const result = await cliOnTerminal(["mirror", "--from", source.registry.url, "--log-key", logKey, "--once", "--batch", "2"], env);
        expect(result.code, result.stdout).toBe(0);
        expect(drawnSteps(result.stdout)).toEqual([
          "mirrored 2 of 5 records of progress.test/log",
          "mirrored 4 of 5 records of progress.test/log",
          "mirrored 5 of 5 records of progress.test/log",
          "mirrored records [0, 5) of progress.test/log: verified against its checkpoint of 5",
        ]);
      } finally {
        await mirror.remove();
      }
    },
    CLI_MS,
  );
});

describe("when stderr is not a terminal", () => {
  it(
    "verify and mirror write no progress",
    async () => {
      const verified = await runCli(["verify", did, "--log-key", logKey], childEnv({ REGISTRY_URL: source.registry.url }));
      expect(verified.code, verified.stderr).toBe(0);
      expect(verified.stderr).toBe("");
      const mirror: MirrorDatabase = await mirrorDatabase();
      try {
        const mirrored = await runMirrorCli(source.registry.url, ["--log-key", logKey, "--once", "--batch", "2"], mirror);
        expect(mirrored.code, mirrored.stderr).toBe(0);
        expect(mirrored.stderr).toBe("");
        expect(mirrored.stdout).toBe("mirrored records [0, 5) of progress.test/log: verified against its checkpoint of 5\n");
      } finally {
        await mirror.remove();
      }
    },
    CLI_MS,
  );
});
