import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config.js";

/**
 * The project's own CLI as an install runs it: compiled JavaScript, which the lanes' global setup
 * (compiled-cli.ts) builds when a source changed. Loading the sources through tsx instead costs
 * each of the hundreds of processes the tests start a few hundred milliseconds more.
 */
export const REGISTRY_BIN = fileURLToPath(new URL("../../bin/registry.js", import.meta.url));
/** The development runner (`npm run registry`), which runs the TypeScript sources through tsx. */
export const REGISTRY_DEV_BIN = fileURLToPath(new URL("../../bin/registry-dev.js", import.meta.url));
export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Every variable the registry reads, found by letting loadConfig read an environment that records
 * what is asked of it: a child gets none of them from the test's environment unless given, and a
 * new setting needs no list kept by hand.
 */
const REGISTRY_VARIABLES: readonly string[] = (() => {
  const read = new Set<string>();
  const recorder = new Proxy({} as Record<string, string | undefined>, {
    get(_target, name) {
      if (typeof name === "string") read.add(name);
      return undefined;
    },
  });
  loadConfig(recorder);
  return [...read];
})();

/** The test process's environment without the registry's variables, plus `overrides`. */
export function childEnv(overrides: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REGISTRY_VARIABLES) delete env[name];
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** A port that was free a moment ago: listen on 0, read the port, close. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function temporaryDirectory(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node bin/registry.js ...args` (or another runner) to completion; never rejects on a non-zero exit. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000, bin = REGISTRY_BIN): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env, cwd: PROJECT_ROOT, timeout: timeoutMs, killSignal: "SIGKILL" },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") {
          reject(new Error(`registry ${args.join(" ")} did not finish: ${error.message}\n${stderr}`));
          return;
        }
        resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
  });
}

export interface ServerProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything written so far on stdout and stderr. */
  output(): string;
  /**
   * The lines containing `text`, once at least one has been written: the server's log is buffered
   * and flushed every second (src/logger.ts), so a line may come after the event it tells of.
   */
  logLines(text: string, timeoutMs?: number): Promise<string[]>;
  /** SIGTERM, then the exit code and signal; SIGKILL and reject if it takes longer than `timeoutMs`. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number }>;
}

/** Starts `node bin/registry.js serve ...args` on `port` and waits until /healthz answers 200. */
export async function startServerProcess(
  args: readonly string[],
  port: number,
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [REGISTRY_BIN, "serve", ...args], {
    env: { ...env, PORT: String(port), HOST: "127.0.0.1" },
    cwd: PROJECT_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  let hasExited = false;
  void exited.then(() => (hasExited = true));
  const url = `http://127.0.0.1:${port}`;

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (hasExited) throw new Error(`registry serve ${args.join(" ")} exited before it was healthy:\n${output}`);
    const healthy = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) })
      .then((response) => response.status === 200)
      .catch(() => false);
    if (healthy) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`registry serve ${args.join(" ")} was not healthy within ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  return {
    url,
    child,
    output: () => output,
    async logLines(text, linesTimeoutMs = 5_000) {
      const until = Date.now() + linesTimeoutMs;
      for (;;) {
        const lines = output.split("\n").filter((line, index, all) => index < all.length - 1 && line.includes(text));
        if (lines.length > 0) return lines;
        if (Date.now() > until) throw new Error(`no line containing ${JSON.stringify(text)} within ${linesTimeoutMs} ms:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async stop(stopTimeoutMs = 5_000) {
      if (hasExited) return { ...(await exited), afterMs: 0 };
      const started = Date.now();
      child.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), stopTimeoutMs);
      });
      const outcome = await Promise.race([exited, timedOut]);
      clearTimeout(timer);
      if (outcome === "timeout") {
        child.kill("SIGKILL");
        await exited;
        throw new Error(`registry serve ${args.join(" ")} did not exit within ${stopTimeoutMs} ms of SIGTERM:\n${output}`);
      }
      return { ...outcome, afterMs: Date.now() - started };
    },
  };
}
